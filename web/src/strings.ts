// Every text the page shows, in one place: English now, ready for Italian (a second
// dictionary of the same keys). Amounts and scores go through the formatters below.

const en = {
  title: "banco — live baccarat",
  lobby: "Tables",
  lobbyHint: "Choose a table to watch and bet.",
  open: "Open table",
  back: "Back to tables",
  limits: (min: string, max: string) => `${min}–${max} a position`,
  players: (n: number) => (n === 1 ? "1 player" : `${n} players`),
  seatsFree: (taken: number, seats: number) => `${seats - taken} of ${seats} seats free`,
  noSeats: "Bet behind: no seats",
  decks: (n: number) => `${n} decks`,
  croupier: (name: string) => `Croupier ${name}`,
  paytable: "Paytable",
  phase: {
    0: "—",
    1: "Waiting for the next round",
    2: "Place your bets",
    3: "No more bets",
    4: "Dealing",
    5: "Result",
    6: "Settled",
    7: "Round void",
  } as Record<number, string>,
  countdown: (s: number) => `Betting closes in ${s} s`,
  lastBets: "Last bets!",
  round: (id: string) => `Round ${id}`,
  player: "Player",
  banker: "Banker",
  tie: "Tie",
  total: (n: number) => `${n}`,
  winner: { 1: "Player wins", 2: "Banker wins", 3: "Tie" } as Record<number, string>,
  natural: "Natural",
  playerPair: "Player Pair",
  bankerPair: "Banker Pair",
  perfectPair: "Perfect Pair",
  cardsDealt: (n: number) => `${n} cards`,
  voided: (why: string) => `The round was voided: ${why}. Every stake is returned.`,
  settled: (staked: string, returned: string, net: string) =>
    `You staked ${staked}; returned ${returned} (${net}).`,
  positions: {
    1: "Player",
    2: "Banker",
    3: "Tie",
    4: "Player Pair",
    5: "Banker Pair",
    6: "Either Pair",
    7: "Perfect Pair",
    8: "Big",
    9: "Small",
  } as Record<number, string>,
  pays: (ratio: string) => `pays ${ratio}`,
  chip: (amount: string) => `Chip ${amount}`,
  chips: "Chips",
  spotLabel: (position: string, ratio: string, pending: string, placed: string) =>
    `${position}, ${ratio}. On the table ${placed}, to send ${pending}. Click adds the chip, right click takes one off.`,
  place: "Place bets",
  clear: "Clear",
  rebet: "Rebet",
  pass: "Pass this hand",
  takeSeat: (n: number) => `Take seat ${n}`,
  anySeat: "Take any seat",
  leaveSeat: "Leave seat",
  seat: (n: number, who: string) => (who ? `Seat ${n}: ${who}` : `Seat ${n}: free`),
  yourSeat: (n: number) => `You sit at seat ${n}.`,
  seatNeeded: "This table has seats: take one to bet.",
  toSend: "To send",
  onTable: "On the table",
  raised: (min: string) => `raised to the ${min} minimum`,
  overMax: (max: string) => `over the ${max} maximum: it will be refused`,
  overSelf: (limit: string) => `over your own ${limit} limit: it will be refused`,
  overBalance: (available: string) => `more than your ${available} available`,
  bettingClosed: "Betting is closed.",
  accepted: (position: string, amount: string) => `${position} ${amount}: accepted`,
  acceptedRaised: (position: string, asked: string, amount: string) =>
    `${position} ${asked}: accepted, raised to ${amount}`,
  refused: (position: string, amount: string, why: string) =>
    `${position} ${amount}: refused — ${why}`,
  cleared: (amount: string) => `Bets taken back: ${amount} returned.`,
  nothingToRebet: "No bets of a previous round to repeat.",
  keysHelp:
    "Keys: 1 Player, 2 Banker, 3 Tie (adds the chip), ↑/↓ ±€1 and Shift+↑/↓ ±€10 on the last spot, Del removes it, 0 or Space rebet, Enter places the bets.",
  scoreboard: "Scoreboard",
  beadPlate: "Bead plate",
  bigRoad: "Big Road",
  bigEyeBoy: "Big Eye Boy",
  smallRoad: "Small Road",
  cockroachPig: "Cockroach Pig",
  counts: (b: number, p: number, t: number, hands: number) =>
    `Banker ${b} · Player ${p} · Tie ${t} · Hands ${hands}`,
  ask: (side: string, bigEye: string, small: string, cockroach: string) =>
    `If ${side} next: Big Eye Boy ${bigEye}, Small Road ${small}, Cockroach Pig ${cockroach}`,
  mark: { R: "red", B: "blue", "": "none" } as Record<string, string>,
  lastResults: (n: number) => `Last ${n} results`,
  noResults: "No results in this shoe yet.",
  balance: "Balance",
  available: (amount: string) => `${amount} available`,
  inPlay: (amount: string) => `${amount} in play`,
  myBets: "My bets",
  noBets: "No bets yet.",
  more: "More",
  net: (amount: string) => `net ${amount}`,
  void: "void",
  chat: "Chat",
  chatRules:
    "Be courteous: offensive or provocative language may get you removed from the table.",
  chatPlaceholder: "Write to the table",
  send: "Send",
  muted: (until: string, why: string) => `You are muted until ${until}: ${why}`,
  unmuted: "You may chat again.",
  selfLimit: "My limit per bet",
  selfLimitHint:
    "Your own maximum on any one bet, on every table. Lowering takes effect at once; raising or removing it only after a cooling-off.",
  setLimit: "Set limit",
  limitNow: (amount: string) => (amount ? `In force: ${amount}` : "No limit of your own"),
  limitPending: (amount: string, when: string) => `${amount} from ${when}`,
  video: "Live video",
  videoWaiting: "Waiting for the table's video…",
  videoUnsupported: "This browser cannot decode the table's video (WebCodecs H.264).",
  delay: (ms: number) => `delay ${ms} ms`,
  log: "Round log",
  logCard: (side: string, card: string, total: number) => `${side} card ${card} (total ${total})`,
  logUndo: (card: string, why: string) => `Card ${card} taken back: ${why}`,
  logResult: (text: string) => text,
  logShoe: (text: string) => text,
  connecting: "Connecting…",
  connected: "Live",
  dropped: (seq: string) =>
    `Connection lost. Reconnecting… nothing is lost: the table resumes after event ${seq}.`,
  resumed: "Reconnected: every event you missed has been shown.",
  gap: "You were away long enough that the table was reloaded from a fresh snapshot.",
  noToken:
    "This page needs to be opened from your casino's lobby (a one-time link). Open the table again from there.",
  launchFailed: (why: string) => `This link cannot open the table: ${why}`,
  error: (why: string) => `Error: ${why}`,
  shoe: {
    1: "New shoe",
    2: "Burn",
    3: "Cut card out: one more hand after this one",
    4: "Last hand of the shoe",
    5: "Shoe ended",
  } as Record<number, string>,
  committed: (commitment: string) => `The shuffle of this shoe is committed to ${commitment}`,
  revealed: (key: string) => `The shoe's shuffle key is ${key}: anyone can re-deal the shoe from it`,
};

export type Strings = typeof en;

/** The page's texts. */
export const t: Strings = en;

const moneyFormats = new Map<string, Intl.NumberFormat>();

/** Minor units as people read them: `€5,025.00`, `-€451.40`. */
export function money(minor: bigint | number, currency = "EUR"): string {
  let format = moneyFormats.get(currency);
  if (!format) {
    format = new Intl.NumberFormat("en-GB", { style: "currency", currency });
    moneyFormats.set(currency, format);
  }
  const value = typeof minor === "bigint" ? minor : BigInt(Math.trunc(minor));
  const negative = value < 0n;
  const abs = negative ? -value : value;
  // Whole units as a bigint and the cents put in its fraction's place: no float ever
  // carries the amount (a double is not exact to the cent beyond 2^53 minor units).
  const cents = String(abs % 100n).padStart(2, "0");
  const text = format
    .formatToParts(abs / 100n)
    .map((part) => (part.type === "fraction" ? cents : part.value))
    .join("");
  // The sign as banco_rules::Money writes it, so every client reads alike.
  return negative ? `-${text}` : text;
}

/** A change, always with its sign: `+€19.00`, `-€5.00`, `+€0.00`. */
export function signed(minor: bigint, currency = "EUR"): string {
  if (minor >= 0n) return `+${money(minor, currency)}`;
  return money(minor, currency);
}

/** A score, Player first, as everywhere in banco: `Player 7 – Banker 9`. */
export function score(player: number, banker: number): string {
  return `${t.player} ${player} – ${t.banker} ${banker}`;
}

/** A payout ratio as players read it: `1:1`, `0.95:1`, `8:1`. */
export function ratio(numerator: number, denominator: number): string {
  if (denominator <= 0) return "—";
  if (numerator % denominator === 0) return `${numerator / denominator}:1`;
  return `${Number((numerator / denominator).toFixed(4))}:1`;
}

const SUITS: Record<string, string> = { S: "♠", H: "♥", D: "♦", C: "♣" };

/** `QC` as `Q♣`, `TH` as `10♥`. */
export function card(code: string): string {
  const rank = code[0] === "T" ? "10" : (code[0] ?? "?");
  return `${rank}${SUITS[code[1] ?? ""] ?? "?"}`;
}

export function isRed(code: string): boolean {
  return code[1] === "H" || code[1] === "D";
}

/** A time of day for people. */
export function time(date: Date): string {
  return date.toLocaleString("en-GB", { dateStyle: "medium", timeStyle: "short" });
}
