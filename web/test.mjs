// Runs the page's unit tests (test/*.test.ts) with Node's own test runner: each file is
// bundled by esbuild for Node first (Node 20 does not run TypeScript), into node_modules
// so that nothing of it is served or committed.
import { build } from "esbuild";
import { readdirSync, rmSync } from "node:fs";
import { spawnSync } from "node:child_process";

const out = "node_modules/.banco-tests";
rmSync(out, { recursive: true, force: true });
const files = readdirSync("test").filter((f) => f.endsWith(".test.ts"));
if (files.length === 0) throw new Error("no tests in test/");
await build({
  entryPoints: files.map((f) => `test/${f}`),
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  outdir: out,
  outExtension: { ".js": ".mjs" },
  packages: "external",
  logLevel: "warning",
});
const run = spawnSync(process.execPath, ["--test", ...files.map((f) => `${out}/${f.replace(/\.ts$/, ".mjs")}`)], {
  stdio: "inherit",
});
process.exit(run.status ?? 1);
