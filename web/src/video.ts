// The table's live video: WatchVideo's H.264 access units decoded with WebCodecs and
// drawn on a canvas. Decoding starts on a keyframe (with its SPS/PPS); when the decoder
// falls behind, the units up to the next keyframe are dropped, so the picture jumps to
// live instead of lagging; a gap in `sequence` (the broadcaster skipped a slow viewer
// ahead) also waits for the keyframe it lands on. Each picture's delay is measured from
// its unit's capture time.

import { h } from "./dom.js";
import { t } from "./strings.js";
import type { Api } from "./api.js";
import type { VideoAccessUnit } from "./gen/banco/v1/video_pb.js";

/** Frames waiting in the decoder beyond which the viewer is behind. */
const BEHIND = 3;

export interface VideoFigures {
  frames: number;
  /** Capture-to-display delays, in ms, of the latest frames. */
  delays: number[];
  /** When the first picture was drawn, in ms since the page started loading. */
  firstPicture: number | null;
  skipped: number;
}

/** The video's figures, which the page's bench and tests read. */
export const figures: VideoFigures = { frames: 0, delays: [], firstPicture: null, skipped: 0 };

/** `avc1.PPCCLL` from an SPS in Annex-B bytes, or a baseline default. */
export function codecOf(config: Uint8Array | undefined): string {
  if (config) {
    for (let i = 0; i + 7 < config.length; i++) {
      const startCode = config[i] === 0 && config[i + 1] === 0 && config[i + 2] === 1;
      if (startCode && ((config[i + 3] ?? 0) & 0x1f) === 7) {
        const hex = (b: number | undefined) => (b ?? 0).toString(16).padStart(2, "0");
        return `avc1.${hex(config[i + 4])}${hex(config[i + 5])}${hex(config[i + 6])}`;
      }
    }
  }
  return "avc1.42E01F";
}

export class Video {
  readonly element: HTMLElement;
  private canvas: HTMLCanvasElement;
  private status: HTMLElement;
  private decoder: VideoDecoder | null = null;
  private codec = "";
  private waitingForKey = true;
  private lastSequence = -1n;
  private abort: AbortController | null = null;
  private lastDelayShown = 0;

  constructor() {
    this.canvas = h("canvas", { width: 1280, height: 720, "aria-label": t.video, role: "img" });
    this.status = h("p", { class: "video-status", "aria-live": "polite" }, t.videoWaiting);
    this.element = h("div", { class: "video" }, this.canvas, this.status);
  }

  /** Watches `table` until stopped; reconnects when the stream ends. */
  async watch(api: Api, table: string): Promise<void> {
    if (typeof VideoDecoder === "undefined") {
      this.status.textContent = t.videoUnsupported;
      return;
    }
    this.stop();
    const abort = new AbortController();
    this.abort = abort;
    let pause = 250;
    while (!abort.signal.aborted) {
      try {
        this.waitingForKey = true;
        for await (const unit of api.watchVideo({ tableId: table }, { signal: abort.signal })) {
          this.unit(unit);
          pause = 250;
        }
      } catch {
        // The stream broke: try again shortly.
      }
      if (abort.signal.aborted) break;
      await new Promise((r) => setTimeout(r, pause));
      pause = Math.min(pause * 2, 4000);
    }
  }

  stop(): void {
    this.abort?.abort();
    this.abort = null;
    this.decoder?.close();
    this.decoder = null;
  }

  private ensureDecoder(codec: string): VideoDecoder {
    if (this.decoder && this.decoder.state !== "closed" && this.codec === codec) return this.decoder;
    this.decoder?.close();
    const decoder = new VideoDecoder({
      output: (frame) => this.draw(frame),
      error: () => {
        this.waitingForKey = true;
        this.decoder = null;
      },
    });
    // No `description`: the stream stays Annex B, parameter sets in band.
    decoder.configure({ codec, optimizeForLatency: true });
    this.decoder = decoder;
    this.codec = codec;
    return decoder;
  }

  private unit(unit: VideoAccessUnit): void {
    const gap = this.lastSequence >= 0n && unit.sequence !== this.lastSequence + 1n;
    this.lastSequence = unit.sequence;
    if (gap) this.waitingForKey = true;
    const behind = (this.decoder?.decodeQueueSize ?? 0) > BEHIND;
    if (!unit.keyframe && (this.waitingForKey || behind)) {
      if (behind) this.waitingForKey = true;
      figures.skipped += 1;
      return;
    }
    let data = unit.data;
    if (unit.keyframe) {
      this.waitingForKey = false;
      const config = unit.codecConfig;
      if (config && config.length > 0) {
        data = new Uint8Array(config.length + unit.data.length);
        data.set(config, 0);
        data.set(unit.data, config.length);
      }
    }
    const decoder = this.ensureDecoder(unit.keyframe ? codecOf(unit.codecConfig) : this.codec || codecOf(undefined));
    decoder.decode(
      new EncodedVideoChunk({
        type: unit.keyframe ? "key" : "delta",
        // Capture time in µs: the delay is read from it when the frame comes out.
        timestamp: Number(unit.captureTimeUnixNs / 1000n),
        data,
      }),
    );
  }

  private draw(frame: VideoFrame): void {
    if (this.canvas.width !== frame.displayWidth || this.canvas.height !== frame.displayHeight) {
      this.canvas.width = frame.displayWidth;
      this.canvas.height = frame.displayHeight;
    }
    const context = this.canvas.getContext("2d");
    context?.drawImage(frame, 0, 0, this.canvas.width, this.canvas.height);
    const delay = Date.now() - frame.timestamp / 1000;
    frame.close();
    figures.frames += 1;
    figures.delays.push(delay);
    if (figures.delays.length > 2000) figures.delays.splice(0, 1000);
    if (figures.firstPicture === null) figures.firstPicture = performance.now();
    this.canvas.dataset.frames = String(figures.frames);
    const now = performance.now();
    if (now - this.lastDelayShown > 500) {
      this.lastDelayShown = now;
      this.status.textContent = t.delay(Math.round(delay));
    }
  }
}
