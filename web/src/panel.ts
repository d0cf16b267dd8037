// The player's own panel: the wallet's balance, my bets (seed 004's list), the chat with
// the table's rules, and my own limit per bet.

import { ConnectError } from "@connectrpc/connect";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { h, fill } from "./dom.js";
import { t, money, signed, time } from "./strings.js";
import type { Api } from "./api.js";
import type { Balance } from "./gen/banco/v1/player_pb.js";

const PAGE = 10;

export class Panel {
  readonly element: HTMLElement;
  private api: Api;
  private tableId: string;
  private currency = "EUR";
  private balanceLine = h("p", { class: "balance", "aria-live": "polite", "data-available": "" });
  private bets = h("ol", { class: "my-bets" });
  private chatLines = h("ol", { class: "chat-lines", "aria-live": "polite" });
  private chatNote = h("p", { class: "chat-note", role: "status" });
  private limitLine = h("p", { class: "limit-line" });
  private onLimit: (limit: bigint) => void = () => {};

  constructor(api: Api, tableId: string) {
    this.api = api;
    this.tableId = tableId;
    const chatInput = h("input", {
      type: "text",
      name: "chat",
      maxlength: 200,
      autocomplete: "off",
      placeholder: t.chatPlaceholder,
      "aria-label": t.chatPlaceholder,
    });
    const chatForm = h(
      "form",
      {
        class: "chat-form",
        onsubmit: (event: Event) => {
          event.preventDefault();
          void this.send(chatInput);
        },
      },
      chatInput,
      h("button", { type: "submit" }, t.send),
    );
    const limitInput = h("input", {
      type: "number",
      name: "self-limit",
      min: 0,
      step: "0.01",
      inputmode: "decimal",
      "aria-label": `${t.selfLimit} (€, 0 removes it)`,
    });
    const limitForm = h(
      "form",
      {
        class: "limit-form",
        onsubmit: (event: Event) => {
          event.preventDefault();
          void this.setLimit(limitInput.value);
        },
      },
      limitInput,
      h("button", { type: "submit" }, t.setLimit),
    );
    this.element = h(
      "aside",
      { class: "panel", "aria-label": t.balance },
      h("section", {}, h("h3", {}, t.balance), this.balanceLine),
      h("section", {}, h("h3", {}, t.myBets), this.bets),
      h("section", { class: "chat" }, h("h3", {}, t.chat), h("p", { class: "muted" }, t.chatRules), this.chatLines, chatForm, this.chatNote),
      h("section", {}, h("h3", {}, t.selfLimit), h("p", { class: "muted" }, t.selfLimitHint), this.limitLine, limitForm),
    );
  }

  setCurrency(currency: string): void {
    this.currency = currency;
  }

  whenLimitSet(listener: (limit: bigint) => void): void {
    this.onLimit = listener;
  }

  setBalance(balance: Balance | undefined): void {
    if (!balance) return;
    this.balanceLine.dataset.available = String(balance.availableMinor);
    this.balanceLine.textContent = `${t.available(money(balance.availableMinor, this.currency))} · ${t.inPlay(money(balance.inPlayMinor, this.currency))}`;
  }

  /**
   * Reloads my bets. Not the balance: the table's stream carries it (the snapshot, then
   * every change in order), and a GetBalance read before a payout landed but answered
   * after its BalanceChanged would put the older figure back with nothing to correct it.
   */
  async refresh(): Promise<void> {
    try {
      const mine = await this.api.myBets({ tableId: this.tableId, pageSize: PAGE, pageToken: "" });
      if (mine.entries.length === 0) {
        fill(this.bets, h("li", { class: "muted" }, t.noBets));
        return;
      }
      fill(
        this.bets,
        ...mine.entries.map((entry) =>
          h(
            "li",
            { "data-round": entry.roundId },
            h("strong", {}, entry.roundId),
            entry.placedAt ? ` · ${time(new Date(timestampMs(entry.placedAt)))}` : "",
            h("br"),
            entry.bets.map((b) => `${t.positions[b.kind] ?? ""} ${money(b.stakeMinor, this.currency)}`).join(", "),
            " · ",
            entry.voided ? t.void : entry.result ? (t.winner[entry.result.winner] ?? "") : "…",
            entry.settlements.length > 0 || entry.voided ? ` · ${t.net(signed(entry.netMinor, this.currency))}` : "",
          ),
        ),
      );
    } catch (error) {
      this.chatNote.textContent = t.error(error instanceof ConnectError ? error.rawMessage : String(error));
    }
  }

  chat(sender: string, text: string, croupier: boolean): void {
    this.chatLines.append(h("li", { class: croupier ? "croupier" : "" }, h("strong", {}, `${sender}: `), text));
    while (this.chatLines.children.length > 100) this.chatLines.firstElementChild?.remove();
  }

  muted(until: Date | null, reason: string): void {
    this.chatNote.textContent = until ? t.muted(time(until), reason) : t.unmuted;
  }

  private async send(input: HTMLInputElement): Promise<void> {
    const text = input.value.trim();
    if (!text) return;
    try {
      const answer = await this.api.sendChat({ tableId: this.tableId, text });
      if (answer.refusal) {
        this.chatNote.textContent = answer.refusal.message;
      } else {
        input.value = "";
        this.chatNote.textContent = "";
      }
    } catch (error) {
      this.chatNote.textContent = t.error(error instanceof ConnectError ? error.rawMessage : String(error));
    }
  }

  private async setLimit(value: string): Promise<void> {
    const match = /^\s*(\d+)(?:\.(\d{1,2}))?\s*$/.exec(value);
    if (!match) {
      this.limitLine.textContent = t.error(`"${value}" is not an amount such as 25 or 2.50`);
      return;
    }
    const minor = BigInt(match[1] ?? "0") * 100n + BigInt((match[2] ?? "").padEnd(2, "0"));
    try {
      const answer = await this.api.setSelfLimit({ maxBetMinor: minor });
      const now = answer.maxBetMinor > 0n ? money(answer.maxBetMinor, this.currency) : "";
      const pending = answer.pendingEffectiveAt
        ? ` · ${t.limitPending(answer.pendingMaxBetMinor > 0n ? money(answer.pendingMaxBetMinor, this.currency) : "—", time(new Date(timestampMs(answer.pendingEffectiveAt))))}`
        : "";
      this.limitLine.textContent = t.limitNow(now) + pending;
      this.onLimit(answer.maxBetMinor);
    } catch (error) {
      this.limitLine.textContent = t.error(error instanceof ConnectError ? error.rawMessage : String(error));
    }
  }
}
