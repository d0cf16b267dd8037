// The scoreboard: bead plate, Big Road and the three derived roads, drawn on six-row
// boards as banco's rules place them (crates/rules/src/roads/grid.rs: a streak longer
// than the board turns right along the row where it stops, the "dragon tail"), with the
// counts and what each derived road would show next.
//
// Every drawn cell carries its place (`data-row`, `data-col`) and mark (`data-mark`), so
// what the page shows can be checked against `banco roads` for the same results.

import { h, fill } from "./dom.js";
import { t } from "./strings.js";
import { Side, Winner, type Roads } from "./gen/banco/v1/common_pb.js";

export const ROWS = 6;

interface Position {
  row: number;
  col: number;
}

/** Places a road's entries on the board as they come (a port of banco's Placer). */
export class Placer {
  private occupied = new Map<number, number>();
  private last: Position | null = null;
  private startCol = 0;
  private turned = false;

  private taken(row: number, col: number): boolean {
    return ((this.occupied.get(col) ?? 0) & (1 << row)) !== 0;
  }

  private take(pos: Position): void {
    this.occupied.set(pos.col, (this.occupied.get(pos.col) ?? 0) | (1 << pos.row));
  }

  place(newColumn: boolean): Position {
    let pos: Position;
    const last = this.last;
    if (last !== null && !newColumn) {
      const below = last.row + 1;
      if (!this.turned && below < ROWS && !this.taken(below, last.col)) {
        pos = { row: below, col: last.col };
      } else {
        this.turned = true;
        let col = last.col + 1;
        while (this.taken(last.row, col)) col += 1;
        pos = { row: last.row, col };
      }
    } else {
      let col = last === null ? 0 : this.startCol + 1;
      while (this.taken(0, col)) col += 1;
      this.startCol = col;
      this.turned = false;
      pos = { row: 0, col };
    }
    this.take(pos);
    this.last = pos;
    return pos;
  }
}

interface Cell extends Position {
  mark: string;
  label: string;
  ties?: number;
}

function board(name: string, cells: Cell[], kind: string, minCols: number): HTMLElement {
  const cols = Math.max(minCols, ...cells.map((c) => c.col + 1));
  const grid = h("div", {
    class: `road-grid road-${kind}`,
    role: "img",
    "aria-label": `${name}: ${cells.length === 0 ? t.noResults : cells.map((c) => c.label).join(", ")}`,
    style: `--cols:${cols}`,
  });
  for (const cell of cells) {
    const el = h(
      "span",
      {
        class: `mark mark-${cell.mark}`,
        "data-row": cell.row,
        "data-col": cell.col,
        "data-mark": cell.mark,
        "data-ties": cell.ties,
        style: `grid-row:${cell.row + 1};grid-column:${cell.col + 1}`,
      },
      kind === "bead" ? cell.mark : cell.ties ? String(cell.ties) : "",
    );
    grid.append(el);
  }
  return h("figure", { class: `road road-${kind}-wrap`, "data-road": kind }, h("figcaption", {}, name), grid);
}

const SIDE_LETTER: Record<number, string> = { [Side.PLAYER]: "P", [Side.BANKER]: "B" };
const WINNER_LETTER: Record<number, string> = {
  [Winner.PLAYER]: "P",
  [Winner.BANKER]: "B",
  [Winner.TIE]: "T",
};
const LETTER_NAME: Record<string, string> = { P: t.player, B: t.banker, T: t.tie };

/** The Big Road's cells from its logical columns. */
export function bigRoadCells(roads: Roads): Cell[] {
  const placer = new Placer();
  const cells: Cell[] = [];
  for (const column of roads.bigRoad) {
    column.entries.forEach((entry, i) => {
      const pos = placer.place(i === 0);
      const mark = SIDE_LETTER[entry.side] ?? "?";
      const ties = entry.ties;
      cells.push({
        ...pos,
        mark,
        ties,
        label: `${LETTER_NAME[mark]}${ties ? ` +${ties} ${t.tie}` : ""}`,
      });
    });
  }
  return cells;
}

function derivedCells(marks: string): Cell[] {
  const placer = new Placer();
  let previous = "";
  return [...marks].map((mark) => {
    const pos = placer.place(mark !== previous);
    previous = mark;
    return { ...pos, mark, label: t.mark[mark] ?? mark };
  });
}

function beadCells(beads: string): Cell[] {
  return [...beads].map((mark, i) => ({
    row: i % ROWS,
    col: Math.floor(i / ROWS),
    mark,
    label: LETTER_NAME[mark] ?? mark,
  }));
}

/** Draws the whole scoreboard into `el`. */
export function drawScoreboard(el: HTMLElement, roads: Roads | undefined, lastResults: Winner[]): void {
  if (!roads) {
    fill(el, h("p", {}, t.noResults));
    return;
  }
  const stats = roads.stats;
  const askLine = (side: string, ask: Roads["bankerAsk"]) =>
    h(
      "li",
      { "data-ask": side },
      t.ask(
        side,
        ask?.bigEyeBoy ? (t.mark[ask.bigEyeBoy] ?? "") : t.mark[""]!,
        ask?.smallRoad ? (t.mark[ask.smallRoad] ?? "") : t.mark[""]!,
        ask?.cockroachPig ? (t.mark[ask.cockroachPig] ?? "") : t.mark[""]!,
      ),
    );
  const last = lastResults.map((w) => WINNER_LETTER[w] ?? "?");
  fill(
    el,
    h(
      "p",
      { class: "counts", "data-counts": `${stats?.banker ?? 0} ${stats?.player ?? 0} ${stats?.tie ?? 0} ${stats?.hands ?? 0}` },
      t.counts(stats?.banker ?? 0, stats?.player ?? 0, stats?.tie ?? 0, stats?.hands ?? 0),
    ),
    board(t.beadPlate, beadCells(roads.beadPlate), "bead", 6),
    board(t.bigRoad, bigRoadCells(roads), "big", 12),
    h(
      "div",
      { class: "derived" },
      board(t.bigEyeBoy, derivedCells(roads.bigEyeBoy), "big-eye-boy", 8),
      board(t.smallRoad, derivedCells(roads.smallRoad), "small-road", 8),
      board(t.cockroachPig, derivedCells(roads.cockroachPig), "cockroach-pig", 8),
    ),
    h("ul", { class: "asks" }, askLine(t.banker, roads.bankerAsk), askLine(t.player, roads.playerAsk)),
    h(
      "div",
      { class: "last-results", "data-last-results": last.join("") },
      h("h3", {}, t.lastResults(last.length)),
      h(
        "ol",
        { class: "results-strip", "aria-label": t.lastResults(last.length) },
        ...last.map((mark) => h("li", { class: `mark mark-${mark}`, "aria-label": LETTER_NAME[mark] }, mark)),
      ),
    ),
  );
}

/** A small Big Road for the lobby. */
export function smallBigRoad(roads: Roads | undefined): HTMLElement {
  if (!roads || roads.bigRoad.length === 0) return h("p", { class: "muted" }, t.noResults);
  return board(t.bigRoad, bigRoadCells(roads), "big small", 10);
}
