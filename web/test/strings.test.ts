// Amounts, scores and cards as every banco client writes them (banco_rules::Money and
// Score): people read euros, Player first.
import { test } from "node:test";
import assert from "node:assert/strict";
import { card, money, ratio, score, signed } from "../src/strings.js";

test("amounts in euros from exact minor units", () => {
  assert.equal(money(502_500n), "€5,025.00");
  assert.equal(money(-45_140n), "-€451.40");
  assert.equal(money(1n), "€0.01");
  assert.equal(money(0n), "€0.00");
  // Beyond what a double holds to the cent, still exact.
  assert.equal(money(900_719_925_474_099_199n), "€9,007,199,254,740,991.99");
});

test("a change always shows its sign", () => {
  assert.equal(signed(1_900n), "+€19.00");
  assert.equal(signed(-2_500n), "-€25.00");
  assert.equal(signed(0n), "+€0.00");
});

test("scores are Player first", () => {
  assert.equal(score(7, 9), "Player 7 – Banker 9");
});

test("payouts and cards as players read them", () => {
  assert.equal(ratio(1, 1), "1:1");
  assert.equal(ratio(19, 20), "0.95:1");
  assert.equal(ratio(8, 1), "8:1");
  assert.equal(ratio(1, 0), "—");
  assert.equal(card("QC"), "Q♣");
  assert.equal(card("TH"), "10♥");
});
