// The decoder is configured from the stream's own SPS: profile, constraints and level.
import { test } from "node:test";
import assert from "node:assert/strict";
import { codecOf } from "../src/video.js";

test("the codec string comes from the SPS after any access unit delimiter", () => {
  // AUD, then an SPS of Constrained Baseline (0x42, 0xC0) level 3.0 (0x1E).
  const config = new Uint8Array([0, 0, 0, 1, 0x09, 0x10, 0, 0, 0, 1, 0x67, 0x42, 0xc0, 0x1e, 0xd9, 0x00]);
  assert.equal(codecOf(config), "avc1.42c01e");
});

test("without parameter sets it falls back to Constrained Baseline", () => {
  assert.equal(codecOf(undefined), "avc1.42E01F");
  assert.equal(codecOf(new Uint8Array([0, 0, 1, 0x68, 0xce, 0x38, 0x80, 0])), "avc1.42E01F");
});
