// The lobby: every table with its limits, paytable, players, phase and a small Big Road.

import { h, fill } from "./dom.js";
import { t, money, ratio } from "./strings.js";
import { smallBigRoad } from "./roads.js";
import type { Api } from "./api.js";
import type { TableInfo } from "./gen/banco/v1/player_pb.js";
import type { Paytable } from "./gen/banco/v1/common_pb.js";

export function paytableRows(paytable: Paytable | undefined): [string, string][] {
  if (!paytable) return [];
  const r = (x: { numerator: number; denominator: number } | undefined) =>
    x ? ratio(x.numerator, x.denominator) : "—";
  return [
    [t.positions[1]!, r(paytable.player)],
    [t.positions[2]!, r(paytable.banker)],
    [t.positions[3]!, r(paytable.tie)],
    [t.positions[4]!, r(paytable.playerPair)],
    [t.positions[5]!, r(paytable.bankerPair)],
    [t.positions[7]!, r(paytable.perfectPair)],
    [t.positions[6]!, r(paytable.eitherPair)],
    [t.positions[8]!, r(paytable.big)],
    [t.positions[9]!, r(paytable.small)],
  ];
}

function limitsText(table: TableInfo): string {
  const main = table.limits.find((l) => l.kind === 1) ?? table.limits[0];
  if (!main) return "";
  return t.limits(money(main.minMinor, table.currency), money(main.maxMinor, table.currency));
}

export async function drawLobby(el: HTMLElement, api: Api, open: (table: string) => void): Promise<void> {
  const { tables } = await api.listTables({});
  const cards = await Promise.all(
    tables.map(async (table) => {
      const roads = await api.lastResults({ tableId: table.tableId }).catch(() => null);
      return h(
        "li",
        { class: "table-card", "data-table": table.tableId },
        h("h3", {}, table.name || table.tableId),
        h("p", { class: "phase" }, t.phase[table.phase] ?? ""),
        h("p", {}, limitsText(table)),
        h(
          "p",
          {},
          `${t.players(table.players)} · ${t.decks(table.decks)} · ${
            table.seats ? t.seatsFree(table.seatsTaken, table.seats) : t.noSeats
          }`,
        ),
        table.croupier ? h("p", {}, t.croupier(table.croupier)) : null,
        h(
          "details",
          {},
          h("summary", {}, t.paytable),
          h(
            "table",
            { class: "paytable" },
            ...paytableRows(table.paytable).map(([name, pays]) => h("tr", {}, h("th", {}, name), h("td", {}, pays))),
          ),
        ),
        smallBigRoad(roads?.roads),
        h(
          "button",
          { type: "button", class: "primary", "aria-label": `${t.open} ${table.tableId}`, onclick: () => open(table.tableId) },
          t.open,
        ),
      );
    }),
  );
  fill(el, h("h2", {}, t.lobby), h("p", { class: "muted" }, t.lobbyHint), h("ul", { class: "tables" }, ...cards));
}
