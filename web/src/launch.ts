// How the player's token reaches the page: the casino's lobby opens `/?code=…`, a
// one-time code that the page exchanges once for the token. The token stays in this
// page's memory only (never in storage or a cookie another page could read); the code is
// taken out of the address at once, so it is not in the history or a shared link.

export interface Session {
  token: string;
  player: string;
}

export async function takeLaunchCode(): Promise<Session | { error: string }> {
  const url = new URL(window.location.href);
  const code = url.searchParams.get("code");
  if (code === null) return { error: "" };
  url.searchParams.delete("code");
  window.history.replaceState(null, "", url.pathname + url.search + url.hash);
  const answer = await fetch("/launch/exchange", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ code }),
    cache: "no-store",
    credentials: "omit",
  });
  const body = (await answer.json().catch(() => ({}))) as Record<string, unknown>;
  if (!answer.ok || typeof body.token !== "string") {
    return { error: typeof body.error === "string" ? body.error : `HTTP ${answer.status}` };
  }
  return { token: body.token, player: String(body.player ?? "") };
}
