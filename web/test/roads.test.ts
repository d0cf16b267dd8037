// The page places the roads as banco's rules do (crates/rules/src/roads/grid.rs): the
// same cases as that file's tests, so the two stay one placement.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Placer } from "../src/roads.js";

function placeColumns(lengths: number[]): [number, number][][] {
  const placer = new Placer();
  return lengths.map((length) =>
    Array.from({ length }, (_, i) => {
      const p = placer.place(i === 0);
      return [p.row, p.col] as [number, number];
    }),
  );
}

test("short columns stack down side by side", () => {
  assert.deepEqual(placeColumns([2, 1, 3]), [
    [[0, 0], [1, 0]],
    [[0, 1]],
    [[0, 2], [1, 2], [2, 2]],
  ]);
});

test("a streak of eight turns right on the bottom row", () => {
  assert.deepEqual(placeColumns([8, 1]), [
    [[0, 0], [1, 0], [2, 0], [3, 0], [4, 0], [5, 0], [5, 1], [5, 2]],
    [[0, 1]],
  ]);
});

test("a column beside a tail turns one row higher", () => {
  assert.deepEqual(placeColumns([8, 7]), [
    [[0, 0], [1, 0], [2, 0], [3, 0], [4, 0], [5, 0], [5, 1], [5, 2]],
    [[0, 1], [1, 1], [2, 1], [3, 1], [4, 1], [4, 2], [4, 3]],
  ]);
});

test("a tail on the top row pushes the next start right", () => {
  const cols = placeColumns([8, 8, 8, 8, 8, 8, 1]);
  assert.deepEqual(cols[1]?.slice(4), [[4, 1], [4, 2], [4, 3], [4, 4]]);
  assert.deepEqual(cols[5], Array.from({ length: 8 }, (_, i) => [0, 5 + i]));
  assert.deepEqual(cols[6], [[0, 13]]);
});
