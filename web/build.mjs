// Bundles the page into dist/: one script and one stylesheet under dist/assets/, named by
// a hash of their content (so they are cached for a year), and index.html naming them
// (checked again on every load). The broadcaster builds dist/ into its binary.
import { build } from "esbuild";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { basename } from "node:path";

rmSync("dist", { recursive: true, force: true });
mkdirSync("dist/assets", { recursive: true });
const result = await build({
  entryPoints: ["src/main.ts"],
  bundle: true,
  format: "esm",
  target: "es2022",
  minify: true,
  sourcemap: false,
  outdir: "dist/assets",
  entryNames: "[name]-[hash]",
  metafile: true,
  legalComments: "none",
  logLevel: "warning",
});
const outputs = Object.keys(result.metafile.outputs);
const script = outputs.find((o) => o.endsWith(".js"));
const style = outputs.find((o) => o.endsWith(".css"));
if (!script || !style) throw new Error(`esbuild made ${outputs.join(", ")}: no script or no stylesheet`);
const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>banco</title>
<link rel="stylesheet" href="/assets/${basename(style)}">
<script type="module" src="/assets/${basename(script)}"></script>
</head>
<body>
<header class="top"><h1>banco</h1><span id="who" aria-label="Signed in as"></span></header>
<main id="main" aria-live="polite"><noscript>This page needs JavaScript.</noscript></main>
</body>
</html>
`;
writeFileSync("dist/index.html", html);
console.log(`page built: dist/index.html, ${outputs.map((o) => basename(o)).join(", ")}`);
