// One table: its live state from Subscribe (a snapshot, then every event, resumed from
// the last seq after a drop, so nothing is lost or shown twice), the video, the layout
// to bet on, the scoreboard and the player's panel.

import { ConnectError } from "@connectrpc/connect";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { h, fill } from "./dom.js";
import { t, money, signed, score, ratio, card as cardText, isRed } from "./strings.js";
import { drawScoreboard } from "./roads.js";
import { Video } from "./video.js";
import { Panel } from "./panel.js";
import { freshKey, type Api } from "./api.js";
import { BetKind, Side, TablePhase, Winner, type HandResult, type PositionTotal, type Roads, type Paytable, type Refusal } from "./gen/banco/v1/common_pb.js";
import type { TableEvent, TableInfo, Balance, BetDecision, Snapshot } from "./gen/banco/v1/player_pb.js";

const CHIPS = [100n, 500n, 2500n, 10000n, 50000n];
const KINDS: BetKind[] = [
  BetKind.PLAYER,
  BetKind.BANKER,
  BetKind.TIE,
  BetKind.PLAYER_PAIR,
  BetKind.BANKER_PAIR,
  BetKind.PERFECT_PAIR,
  BetKind.EITHER_PAIR,
  BetKind.BIG,
  BetKind.SMALL,
];
const ONE_EURO = 100n;
const TEN_EUROS = 1000n;

function pays(paytable: Paytable | undefined, kind: BetKind): string {
  if (!paytable) return "";
  const r = {
    [BetKind.PLAYER]: paytable.player,
    [BetKind.BANKER]: paytable.banker,
    [BetKind.TIE]: paytable.tie,
    [BetKind.PLAYER_PAIR]: paytable.playerPair,
    [BetKind.BANKER_PAIR]: paytable.bankerPair,
    [BetKind.EITHER_PAIR]: paytable.eitherPair,
    [BetKind.PERFECT_PAIR]: paytable.perfectPair,
    [BetKind.BIG]: paytable.big,
    [BetKind.SMALL]: paytable.small,
  }[kind as number];
  return r ? ratio(r.numerator, r.denominator) : "";
}

function cardValue(code: string): number {
  const rank = code[0] ?? "";
  if (rank === "A") return 1;
  if ("TJQK".includes(rank)) return 0;
  return Number(rank) || 0;
}

function why(error: unknown): string {
  return error instanceof ConnectError ? error.rawMessage : String(error);
}

export class TableView {
  readonly element: HTMLElement;
  private api: Api;
  private tableId: string;
  private me: string;
  private video = new Video();
  private panel: Panel;
  private abort = new AbortController();
  // What the stream said so far.
  private lastSeq = 0n;
  private clockOffset = 0;
  private info: TableInfo | undefined;
  private roundId = "";
  private phase: TablePhase = TablePhase.UNSPECIFIED;
  private closesAt: number | null = null;
  private lastBets = false;
  private cards: { card: string; side: Side }[] = [];
  private totals = { player: 0, banker: 0 };
  private result: HandResult | undefined;
  private roads: Roads | undefined;
  private lastResults: Winner[] = [];
  private betTotals: PositionTotal[] = [];
  private own = new Map<BetKind, bigint>();
  private balance: Balance | undefined;
  private seats = new Map<number, string>();
  private mySeat = 0;
  // The player's slip: stakes chosen, not yet sent.
  private slip = new Map<BetKind, bigint>();
  private chip = CHIPS[1]!;
  private lastSpot: BetKind = BetKind.PLAYER;
  private selfLimit = 0n;
  // Parts of the page.
  private connection = h("p", { class: "connection", role: "status", "aria-live": "assertive" }, t.connecting);
  private phaseLine = h("p", { class: "phase-line", "aria-live": "polite" });
  private countdown = h("p", { class: "countdown", "aria-live": "off" });
  private hands = h("div", { class: "hands" });
  private outcome = h("p", { class: "outcome", "aria-live": "polite" });
  private settlement = h("p", { class: "settlement", "aria-live": "polite" });
  private layout = h("div", { class: "layout", role: "group", "aria-label": t.positions[1] + "…" });
  private chipsBar = h("div", { class: "chips", role: "radiogroup", "aria-label": t.chips });
  private preview = h("ul", { class: "preview", "aria-live": "polite" });
  private decisions = h("ul", { class: "decisions", "aria-live": "polite" });
  private seatsBar = h("div", { class: "seats" });
  private scoreboard = h("section", { class: "scoreboard", "aria-label": t.scoreboard });
  private log = h("ol", { class: "log", "aria-label": t.log });
  private ticker: number | undefined;

  constructor(api: Api, tableId: string, me: string, back: () => void) {
    this.api = api;
    this.tableId = tableId;
    this.me = me;
    this.panel = new Panel(api, tableId);
    this.panel.whenLimitSet((limit) => this.setSelfLimit(limit));
    const actions = h(
      "div",
      { class: "actions" },
      h("button", { type: "button", class: "primary", "data-action": "place", onclick: () => void this.place() }, t.place),
      h("button", { type: "button", "data-action": "clear", onclick: () => void this.clear() }, t.clear),
      h("button", { type: "button", "data-action": "rebet", onclick: () => void this.rebet() }, t.rebet),
    );
    this.element = h(
      "div",
      { class: "table-view", "data-table": tableId },
      h(
        "header",
        { class: "table-head" },
        h("button", { type: "button", class: "link", onclick: back }, `← ${t.back}`),
        h("h2", {}, tableId),
        this.connection,
      ),
      h(
        "div",
        { class: "table-main" },
        h(
          "section",
          { class: "stage", "aria-label": t.video },
          this.video.element,
          h("div", { class: "status-bar" }, this.phaseLine, this.countdown),
          this.hands,
          this.outcome,
          this.settlement,
        ),
        h(
          "section",
          { class: "betting", "aria-label": t.place },
          this.layout,
          this.chipsBar,
          actions,
          this.preview,
          this.decisions,
          this.seatsBar,
          h("p", { class: "muted keys-help" }, t.keysHelp),
        ),
        this.scoreboard,
        this.panel.element,
        h("section", { class: "log-wrap", "aria-label": t.log }, h("h3", {}, t.log), this.log),
      ),
    );
    this.drawChips();
    this.drawLayout();
    document.addEventListener("keydown", this.onKey);
    this.ticker = window.setInterval(() => this.drawCountdown(), 250);
  }

  start(): void {
    void this.follow();
    void this.video.watch(this.api, this.tableId);
    void this.panel.refresh();
  }

  stop(): void {
    this.abort.abort();
    this.video.stop();
    document.removeEventListener("keydown", this.onKey);
    window.clearInterval(this.ticker);
  }

  // ---- The stream ----

  /** Subscribes, and after any drop subscribes again from the last seq seen. */
  private async follow(): Promise<void> {
    let pause = 250;
    let dropped = false;
    while (!this.abort.signal.aborted) {
      try {
        const events = this.api.subscribe(
          { tableId: this.tableId, resumeFromSeq: this.lastSeq },
          { signal: this.abort.signal },
        );
        for await (const event of events) {
          if (dropped) {
            dropped = false;
            this.connection.textContent = t.resumed;
          } else if (this.connection.textContent === t.connecting) {
            this.connection.textContent = t.connected;
          }
          this.connection.dataset.state = "live";
          pause = 250;
          this.apply(event);
        }
      } catch (error) {
        if (this.abort.signal.aborted) return;
        void error;
      }
      dropped = true;
      this.connection.dataset.state = "dropped";
      this.connection.textContent = t.dropped(String(this.lastSeq));
      await new Promise((r) => setTimeout(r, pause));
      pause = Math.min(pause * 2, 4000);
    }
  }

  private apply(event: TableEvent): void {
    const control = event.event.case === "snapshot" || event.event.case === "resumeGap" || event.event.case === "cutOff";
    if (!control && event.seq <= this.lastSeq) return;
    if (event.seq > this.lastSeq) this.lastSeq = event.seq;
    if (event.serverTime) this.clockOffset = timestampMs(event.serverTime) - Date.now();
    const e = event.event;
    switch (e.case) {
      case "snapshot":
        this.fromSnapshot(e.value, event.roundId);
        break;
      case "bettingOpened":
        this.roundId = event.roundId;
        this.phase = TablePhase.BETTING_OPEN;
        this.closesAt = e.value.closesAt ? timestampMs(e.value.closesAt) : null;
        this.lastBets = false;
        this.cards = [];
        this.totals = { player: 0, banker: 0 };
        this.result = undefined;
        this.own.clear();
        this.betTotals = [];
        fill(this.outcome);
        fill(this.settlement);
        fill(this.decisions);
        this.note(event, t.round(event.roundId));
        break;
      case "lastBets":
        this.lastBets = true;
        this.closesAt = e.value.closesAt ? timestampMs(e.value.closesAt) : this.closesAt;
        break;
      case "bettingClosed":
        this.phase = TablePhase.BETTING_CLOSED;
        this.closesAt = null;
        this.betTotals = e.value.betTotals;
        break;
      case "betTotals":
        this.betTotals = e.value.betTotals;
        break;
      case "cardDealt": {
        const dealt = e.value.card;
        if (dealt) {
          this.cards.push({ card: dealt.card, side: dealt.side });
          this.totals = { player: e.value.playerTotal, banker: e.value.bankerTotal };
          const side = dealt.side === Side.PLAYER ? t.player : t.banker;
          const total = dealt.side === Side.PLAYER ? e.value.playerTotal : e.value.bankerTotal;
          this.note(event, t.logCard(side, cardText(dealt.card), total));
        }
        this.phase = TablePhase.DEALING;
        break;
      }
      case "cardUndone": {
        const at = this.cards.map((c) => c.card).lastIndexOf(e.value.card);
        if (at >= 0) this.cards.splice(at, 1);
        this.totals = { player: e.value.playerTotal, banker: e.value.bankerTotal };
        this.note(event, t.logUndo(cardText(e.value.card), e.value.reason));
        break;
      }
      case "roundResult":
        this.result = e.value.result;
        this.phase = TablePhase.RESULT;
        if (this.result) this.note(event, this.resultText(this.result));
        break;
      case "roadsUpdated":
        this.roads = e.value.roads;
        this.lastResults = e.value.lastResults;
        break;
      case "roundVoided":
        this.phase = TablePhase.VOIDED;
        this.outcome.textContent = t.voided(e.value.reason);
        this.note(event, t.voided(e.value.reason));
        break;
      case "shoeEvent":
        this.note(event, t.shoe[e.value.kind] ?? "");
        // An automated shoe's commitment, then its key, so a player can check the shoe.
        if (e.value.commitment) this.note(event, t.committed(e.value.commitment));
        if (e.value.shuffleKey) this.note(event, t.revealed(e.value.shuffleKey));
        break;
      case "chatMessage":
        this.panel.chat(e.value.sender, e.value.text, e.value.fromCroupier);
        break;
      case "seatChanged":
        if (e.value.player) this.seats.set(e.value.seat, e.value.player);
        else this.seats.delete(e.value.seat);
        if (e.value.player === this.me) this.mySeat = e.value.seat;
        else if (this.mySeat === e.value.seat) this.mySeat = 0;
        break;
      case "handPassed":
        this.note(event, `${e.value.player} passes (seat ${e.value.seat})`);
        break;
      case "betAccepted":
        for (const bet of e.value.bets) this.own.set(bet.kind, bet.positionTotalMinor);
        break;
      case "betRefused":
        if (e.value.bet && e.value.refusal) this.showRefusal(e.value.bet.kind, e.value.bet.stakeMinor, e.value.refusal);
        break;
      case "settled": {
        const { totalStakeMinor: staked, totalReturnedMinor: returned } = e.value;
        this.settlement.textContent = t.settled(this.money(staked), this.money(returned), signed(returned - staked, this.currency()));
        this.phase = TablePhase.SETTLED;
        void this.panel.refresh();
        break;
      }
      case "balanceChanged":
        this.balance = e.value.balance;
        break;
      case "muted":
        this.panel.muted(e.value.until ? new Date(timestampMs(e.value.until)) : null, e.value.reason);
        break;
      case "resumeGap":
        this.connection.textContent = t.gap;
        break;
      case "cutOff":
        break;
      default:
        break;
    }
    this.draw();
  }

  private fromSnapshot(s: Snapshot, roundId: string): void {
    this.info = s.table ?? this.info;
    this.roundId = roundId;
    this.phase = s.phase;
    this.closesAt = s.closesAt ? timestampMs(s.closesAt) : null;
    this.cards = s.cards.map((c) => ({ card: c.card, side: c.side }));
    const sum = (side: Side) => this.cards.filter((c) => c.side === side).reduce((n, c) => n + cardValue(c.card), 0) % 10;
    this.totals = { player: sum(Side.PLAYER), banker: sum(Side.BANKER) };
    this.result = s.result;
    this.roads = s.roads;
    this.lastResults = s.lastResults;
    this.betTotals = s.betTotals;
    this.own = new Map(s.ownBets.map((b) => [b.kind, b.stakeMinor]));
    this.balance = s.balance;
    this.panel.setCurrency(this.currency());
    this.drawLayout();
  }

  private note(event: TableEvent, text: string): void {
    if (!text) return;
    this.log.prepend(h("li", { "data-seq": String(event.seq) }, text));
    while (this.log.children.length > 200) this.log.lastElementChild?.remove();
  }

  // ---- Drawing ----

  private currency(): string {
    return this.info?.currency || this.balance?.currency || "EUR";
  }

  private money(minor: bigint): string {
    return money(minor, this.currency());
  }

  private resultText(result: HandResult): string {
    const flags = [
      result.natural ? t.natural : "",
      result.playerPair ? t.playerPair : "",
      result.bankerPair ? t.bankerPair : "",
      result.playerPerfectPair || result.bankerPerfectPair ? t.perfectPair : "",
      t.cardsDealt(result.cardsDealt),
    ].filter(Boolean);
    return `${t.winner[result.winner] ?? ""}: ${score(result.playerTotal, result.bankerTotal)} (${flags.join(", ")})`;
  }

  private draw(): void {
    this.phaseLine.textContent = `${t.round(this.roundId || "—")} · ${t.phase[this.phase] ?? ""}`;
    this.phaseLine.dataset.phase = String(this.phase);
    this.drawCountdown();
    const hand = (side: Side, name: string, total: number) =>
      h(
        "div",
        { class: `hand hand-${side === Side.PLAYER ? "player" : "banker"}`, "aria-label": `${name} ${total}` },
        h("h3", {}, `${name} `, h("span", { class: "total", "data-total": total }, String(total))),
        h(
          "ol",
          { class: "cards" },
          ...this.cards
            .filter((c) => c.side === side)
            .map((c) => h("li", { class: `card${isRed(c.card) ? " red" : ""}`, "data-card": c.card }, cardText(c.card))),
        ),
      );
    fill(this.hands, hand(Side.PLAYER, t.player, this.totals.player), hand(Side.BANKER, t.banker, this.totals.banker));
    if (this.result) {
      this.outcome.textContent = this.resultText(this.result);
      this.outcome.dataset.winner = String(this.result.winner);
    } else if (this.phase !== TablePhase.VOIDED) {
      fill(this.outcome);
      delete this.outcome.dataset.winner;
    }
    drawScoreboard(this.scoreboard, this.roads, this.lastResults);
    this.panel.setBalance(this.balance);
    this.drawLayout();
    this.drawSeats();
  }

  private drawCountdown(): void {
    if (this.phase !== TablePhase.BETTING_OPEN || this.closesAt === null) {
      this.countdown.textContent = "";
      this.countdown.classList.remove("last-bets");
      return;
    }
    const left = Math.max(0, Math.ceil((this.closesAt - (Date.now() + this.clockOffset)) / 1000));
    this.countdown.textContent = `${t.countdown(left)}${this.lastBets ? ` — ${t.lastBets}` : ""}`;
    this.countdown.classList.toggle("last-bets", this.lastBets);
  }

  private drawChips(): void {
    fill(
      this.chipsBar,
      ...CHIPS.map((value) =>
        h(
          "button",
          {
            type: "button",
            class: `chip chip-${value}`,
            role: "radio",
            "aria-checked": value === this.chip ? "true" : "false",
            "aria-label": t.chip(this.money(value)),
            "data-chip": String(value),
            onclick: () => {
              this.chip = value;
              this.drawChips();
            },
          },
          this.money(value).replace(".00", ""),
        ),
      ),
    );
  }

  private limitOf(kind: BetKind): { min: bigint; max: bigint } | undefined {
    const limit = this.info?.limits.find((l) => l.kind === kind);
    return limit ? { min: limit.minMinor, max: limit.maxMinor } : undefined;
  }

  private drawLayout(): void {
    const spots = KINDS.map((kind) => {
      const pending = this.slip.get(kind) ?? 0n;
      const placed = this.own.get(kind) ?? 0n;
      const total = this.betTotals.find((p) => p.kind === kind);
      const name = t.positions[kind] ?? "";
      const payout = pays(this.info?.paytable, kind);
      const limit = this.limitOf(kind);
      return h(
        "button",
        {
          type: "button",
          class: `spot spot-${kind}${kind === this.lastSpot ? " current" : ""}`,
          "data-kind": kind,
          "data-pending": String(pending),
          "data-placed": String(placed),
          "aria-label": t.spotLabel(name, t.pays(payout), this.money(pending), this.money(placed)),
          onclick: () => this.add(kind, this.chip),
          oncontextmenu: (event: Event) => {
            event.preventDefault();
            this.add(kind, -this.chip);
          },
        },
        h("span", { class: "spot-name" }, name),
        h("span", { class: "spot-pays" }, payout),
        limit ? h("span", { class: "spot-limits muted" }, `${this.money(limit.min)}–${this.money(limit.max)}`) : null,
        placed > 0n ? h("span", { class: "spot-placed" }, this.money(placed)) : null,
        pending > 0n ? h("span", { class: "spot-pending" }, `+${this.money(pending)}`) : null,
        total && total.totalMinor > 0n ? h("span", { class: "spot-total muted" }, `${this.money(total.totalMinor)} · ${total.bettors}`) : null,
      );
    });
    fill(this.layout, ...spots);
    this.drawPreview();
  }

  /** What the slip would do once sent: raised to minimums, refused over the limits. */
  private drawPreview(): void {
    const lines: HTMLElement[] = [];
    let sum = 0n;
    for (const [kind, pending] of this.slip) {
      if (pending <= 0n) continue;
      sum += pending;
      const name = t.positions[kind] ?? "";
      const limit = this.limitOf(kind);
      const after = (this.own.get(kind) ?? 0n) + pending;
      let note = "";
      if (limit && after < limit.min) note = t.raised(this.money(limit.min));
      if (limit && after > limit.max) note = t.overMax(this.money(limit.max));
      if (this.selfLimit > 0n && pending > this.selfLimit) note = t.overSelf(this.money(this.selfLimit));
      lines.push(h("li", { "data-kind": kind }, `${name} ${this.money(pending)}${note ? `: ${note}` : ""}`));
    }
    const available = this.balance?.availableMinor;
    if (available !== undefined && sum > available) lines.push(h("li", { class: "warn" }, t.overBalance(this.money(available))));
    if (lines.length > 0 && this.phase !== TablePhase.BETTING_OPEN) lines.push(h("li", { class: "warn" }, t.bettingClosed));
    if (lines.length > 0) lines.unshift(h("li", { class: "muted" }, t.toSend));
    fill(this.preview, ...lines);
  }

  private drawSeats(): void {
    const seats = this.info?.seats ?? 0;
    if (seats === 0) {
      fill(this.seatsBar);
      return;
    }
    const buttons: HTMLElement[] = [];
    for (let n = 1; n <= seats; n++) {
      const who = this.seats.get(n) ?? "";
      buttons.push(
        h(
          "button",
          { type: "button", class: "seat", "data-seat": n, disabled: who !== "" && who !== this.me, "aria-label": t.seat(n, who), onclick: () => void this.takeSeat(n) },
          who || String(n),
        ),
      );
    }
    fill(
      this.seatsBar,
      h("p", {}, this.mySeat ? t.yourSeat(this.mySeat) : t.seatNeeded),
      ...buttons,
      h("button", { type: "button", onclick: () => void this.takeSeat(0) }, t.anySeat),
      this.mySeat ? h("button", { type: "button", onclick: () => void this.leaveSeat() }, t.leaveSeat) : null,
      this.mySeat ? h("button", { type: "button", "data-action": "pass", onclick: () => void this.pass() }, t.pass) : null,
    );
  }

  // ---- Betting ----

  private add(kind: BetKind, amount: bigint): void {
    this.lastSpot = kind;
    const next = (this.slip.get(kind) ?? 0n) + amount;
    if (next > 0n) this.slip.set(kind, next);
    else this.slip.delete(kind);
    this.drawLayout();
  }

  private showDecisions(asked: { kind: BetKind; stakeMinor: bigint }[], decisions: BetDecision[]): void {
    const lines = decisions.map((d, i) => {
      const bet = asked[i];
      const name = t.positions[bet?.kind ?? 0] ?? "";
      const stake = this.money(bet?.stakeMinor ?? 0n);
      if (d.decision.case === "accepted") {
        const a = d.decision.value;
        this.own.set(a.kind, a.positionTotalMinor);
        const text =
          a.acceptedMinor !== a.requestedMinor
            ? t.acceptedRaised(t.positions[a.kind] ?? name, this.money(a.requestedMinor), this.money(a.acceptedMinor))
            : t.accepted(t.positions[a.kind] ?? name, this.money(a.acceptedMinor));
        return h("li", { class: "accepted", "data-kind": a.kind, "data-state": "accepted" }, text);
      }
      const refusal = d.decision.value as Refusal | undefined;
      return h("li", { class: "refused", "data-kind": bet?.kind ?? 0, "data-state": "refused" }, t.refused(name, stake, refusal?.message ?? ""));
    });
    this.decisions.append(...lines);
  }

  private showRefusal(kind: BetKind, stake: bigint, refusal: Refusal): void {
    this.decisions.append(
      h("li", { class: "refused", "data-kind": kind, "data-state": "refused" }, t.refused(t.positions[kind] ?? "", this.money(stake), refusal.message)),
    );
  }

  private error(error: unknown): void {
    this.decisions.append(h("li", { class: "refused", "data-state": "error" }, t.error(why(error))));
  }

  async place(): Promise<void> {
    const bets = [...this.slip].filter(([, s]) => s > 0n).map(([kind, stakeMinor]) => ({ kind, stakeMinor }));
    if (bets.length === 0) return;
    this.slip.clear();
    fill(this.decisions);
    try {
      const answer = await this.api.placeBets({ tableId: this.tableId, roundId: this.roundId, bets, idempotencyKey: freshKey() });
      this.showDecisions(bets, answer.decisions);
      if (answer.balance) this.balance = answer.balance;
    } catch (error) {
      this.error(error);
    }
    this.draw();
  }

  async rebet(): Promise<void> {
    fill(this.decisions);
    try {
      const answer = await this.api.rebet({ tableId: this.tableId, roundId: this.roundId, idempotencyKey: freshKey() });
      if (answer.decisions.length === 0) this.decisions.append(h("li", {}, t.nothingToRebet));
      const asked = answer.decisions.map((d) =>
        d.decision.case === "accepted"
          ? { kind: d.decision.value.kind, stakeMinor: d.decision.value.requestedMinor }
          : { kind: BetKind.UNSPECIFIED, stakeMinor: 0n },
      );
      this.showDecisions(asked, answer.decisions);
      if (answer.balance) this.balance = answer.balance;
    } catch (error) {
      this.error(error);
    }
    this.draw();
  }

  async clear(): Promise<void> {
    this.slip.clear();
    if (this.own.size > 0 && this.phase === TablePhase.BETTING_OPEN) {
      try {
        const answer = await this.api.clearBets({ tableId: this.tableId, roundId: this.roundId, idempotencyKey: freshKey() });
        const back = answer.cleared.reduce((n, b) => n + b.stakeMinor, 0n);
        this.own.clear();
        if (answer.balance) this.balance = answer.balance;
        fill(this.decisions, h("li", {}, t.cleared(this.money(back))));
      } catch (error) {
        this.error(error);
      }
    }
    this.draw();
  }

  private async takeSeat(seat: number): Promise<void> {
    try {
      const answer = await this.api.takeSeat({ tableId: this.tableId, seat });
      if (answer.refusal) this.decisions.append(h("li", { class: "refused" }, answer.refusal.message));
      this.mySeat = answer.seat;
    } catch (error) {
      this.error(error);
    }
    this.draw();
  }

  private async leaveSeat(): Promise<void> {
    try {
      const answer = await this.api.leaveSeat({ tableId: this.tableId });
      if (answer.refusal) this.decisions.append(h("li", { class: "refused" }, answer.refusal.message));
      this.mySeat = answer.seat;
    } catch (error) {
      this.error(error);
    }
    this.draw();
  }

  private async pass(): Promise<void> {
    try {
      const answer = await this.api.passHand({ tableId: this.tableId, roundId: this.roundId });
      if (answer.refusal) this.decisions.append(h("li", { class: "refused" }, answer.refusal.message));
    } catch (error) {
      this.error(error);
    }
  }

  setSelfLimit(limit: bigint): void {
    this.selfLimit = limit;
    this.drawPreview();
  }

  // ---- Keys (seed 000's, and seed 002's space) ----

  private onKey = (event: KeyboardEvent): void => {
    const target = event.target as HTMLElement | null;
    if (target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA" || target.isContentEditable)) return;
    const spots: Record<string, BetKind> = { "1": BetKind.PLAYER, "2": BetKind.BANKER, "3": BetKind.TIE };
    const key = event.key;
    if (key === "0" || key === " ") {
      event.preventDefault();
      void this.rebet();
    } else if (spots[key] !== undefined) {
      this.add(spots[key], this.chip);
    } else if (key === "ArrowUp" || key === "ArrowDown") {
      event.preventDefault();
      const step = event.shiftKey ? TEN_EUROS : ONE_EURO;
      this.add(this.lastSpot, key === "ArrowUp" ? step : -step);
    } else if (key === "Delete") {
      this.slip.delete(this.lastSpot);
      this.drawLayout();
    } else if (key === "Enter" && (!target || target.tagName !== "BUTTON")) {
      void this.place();
    }
  };
}
