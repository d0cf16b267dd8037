// The player page: the launch code exchanged for the player's token, then the lobby and
// the table the player opens (`#T01` in the address, so a reload within the session
// keeps the table; the token itself lives in memory only).

import "./styles.css";
import { h, fill, byId } from "./dom.js";
import { t } from "./strings.js";
import { connect, type Api } from "./api.js";
import { takeLaunchCode } from "./launch.js";
import { drawLobby } from "./lobby.js";
import { TableView } from "./table.js";
import { figures } from "./video.js";

// What the page's tests and bench read: the video's counts and delays, and anything the
// content security policy refused (the page must need nothing it refuses).
const violations: string[] = [];
document.addEventListener("securitypolicyviolation", (event) => {
  violations.push(`${event.effectiveDirective}: ${event.blockedURI || "inline"} (${event.sample})`);
});
(window as unknown as { banco: object }).banco = { video: figures, violations };

const main = byId("main");
let view: TableView | null = null;

function route(api: Api, me: string): void {
  view?.stop();
  view = null;
  const table = decodeURIComponent(window.location.hash.slice(1));
  if (table) {
    const opened = new TableView(api, table, me, () => {
      window.location.hash = "";
    });
    view = opened;
    fill(main, opened.element);
    opened.start();
  } else {
    fill(main, h("p", {}, t.connecting));
    drawLobby(main, api, (id) => {
      window.location.hash = encodeURIComponent(id);
    }).catch((error: unknown) => fill(main, h("p", { class: "warn", role: "alert" }, t.error(String(error)))));
  }
}

async function boot(): Promise<void> {
  document.title = t.title;
  const session = await takeLaunchCode();
  if ("error" in session) {
    fill(main, h("p", { class: "warn", role: "alert" }, session.error ? t.launchFailed(session.error) : t.noToken));
    return;
  }
  byId("who").textContent = session.player;
  const api = connect(session.token);
  window.addEventListener("hashchange", () => route(api, session.player));
  route(api, session.player);
}

void boot();
