//! Reading an MP4 back: demuxed and decoded frame by frame, so that a test, the bench or an
//! auditor can tell that a file holds a picture, and how many frames; and its SPS, read from
//! the `avcC` box, to tell whether browsers and phones play it.

use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use gstreamer as gst;
use gstreamer::prelude::*;
use gstreamer_app as gst_app;

use crate::error::StreamingError;
use crate::pipeline::{Owned, add_chain, make, set_state, wait_eos};
use crate::sps::Sps;

/// A `moov` larger than this is not one a table's clip has (its sample tables grow by
/// bytes per frame): refused rather than read into memory.
const MAX_MOOV_BYTES: u64 = 64 << 20;

/// Decodes every frame of the H.264 track of the MP4 at `path`; returns how many.
pub fn decode_mp4(path: &Path) -> Result<u64, StreamingError> {
    if !path.is_file() {
        return Err(StreamingError::Config(format!(
            "{}: no such file",
            path.display()
        )));
    }
    crate::pipeline::init()?;
    let pipeline = Owned(gst::Pipeline::with_name("mp4-check"));
    let src = make("filesrc", "file")?;
    src.set_property("location", path.to_string_lossy().as_ref());
    let demux = make("qtdemux", "demux")?;
    let parse = make("h264parse", "parse")?;
    let decoder = make("avdec_h264", "decoder")?;
    let frames = Arc::new(AtomicU64::new(0));
    let counted = Arc::clone(&frames);
    let sink = gst_app::AppSink::builder()
        .name("frames")
        .sync(false)
        .callbacks(
            gst_app::AppSinkCallbacks::builder()
                .new_sample(move |sink| {
                    sink.pull_sample().map_err(|_| gst::FlowError::Eos)?;
                    counted.fetch_add(1, Ordering::Relaxed);
                    Ok(gst::FlowSuccess::Ok)
                })
                .build(),
        )
        .build();
    add_chain(&pipeline.0, &[&src, &demux])?;
    add_chain(&pipeline.0, &[&parse, &decoder, sink.upcast_ref()])?;
    // The demuxer makes its pads once it has read the file's header.
    let parse_sink = parse
        .static_pad("sink")
        .ok_or_else(|| StreamingError::Build("h264parse has no sink pad".to_owned()))?;
    demux.connect_pad_added(move |_, pad| {
        let is_video = pad
            .current_caps()
            .and_then(|caps| {
                caps.structure(0)
                    .map(|s| s.name().starts_with("video/x-h264"))
            })
            .unwrap_or(false);
        if is_video
            && !parse_sink.is_linked()
            && let Err(e) = pad.link(&parse_sink)
        {
            tracing::warn!(error = ?e, "could not link the MP4's video track");
        }
    });
    set_state(&pipeline.0, gst::State::Playing)?;
    wait_eos(&pipeline.0, Duration::from_secs(120))?;
    set_state(&pipeline.0, gst::State::Null)?;
    Ok(frames.load(Ordering::Relaxed))
}

/// The SPS of the first H.264 track of the MP4 at `path`, from its sample description's
/// `avcC` box (ISO/IEC 14496-15): the parameters every player reads before the first frame.
pub fn mp4_sps(path: &Path) -> Result<Sps, StreamingError> {
    let bad = |problem: String| StreamingError::BadMp4 {
        path: path.display().to_string(),
        problem,
    };
    let moov = read_moov(path).map_err(bad)?;
    sps_in_moov(&moov).map_err(bad)
}

/// The body of the file's top-level `moov` box, wherever it is (mp4mux writes it last).
fn read_moov(path: &Path) -> Result<Vec<u8>, String> {
    let mut file = std::fs::File::open(path).map_err(|e| format!("cannot open: {e}"))?;
    let len = file
        .metadata()
        .map_err(|e| format!("cannot read its size: {e}"))?
        .len();
    let mut at = 0u64;
    while at < len {
        let mut header = [0u8; 16];
        let short = usize::try_from((len - at).min(16)).unwrap_or(16);
        file.seek(SeekFrom::Start(at))
            .and_then(|_| file.read_exact(&mut header[..short]))
            .map_err(|e| format!("cannot read the box at byte {at}: {e}"))?;
        let (kind, header_len, size) = box_header(&header[..short], len - at)
            .map_err(|e| format!("the box at byte {at}: {e}"))?;
        if &kind == b"moov" {
            let body = size - header_len;
            if body > MAX_MOOV_BYTES {
                return Err(format!(
                    "its moov box holds {body} bytes, too many for a clip"
                ));
            }
            let mut moov = vec![0u8; usize::try_from(body).map_err(|e| e.to_string())?];
            file.seek(SeekFrom::Start(at + header_len))
                .and_then(|_| file.read_exact(&mut moov))
                .map_err(|e| format!("cannot read its moov box: {e}"))?;
            return Ok(moov);
        }
        at += size;
    }
    Err("no moov box: not an MP4, or one that was never finished".to_owned())
}

/// A box's type, header length and whole size, from the start of `data`; `left` is what
/// the enclosing box or file has from there. Size 1 is a 64-bit size, 0 "to the end".
fn box_header(data: &[u8], left: u64) -> Result<([u8; 4], u64, u64), String> {
    let word = |at: usize| -> Option<[u8; 4]> { data.get(at..at + 4)?.try_into().ok() };
    let (Some(size), Some(kind)) = (word(0), word(4)) else {
        return Err(format!("{} bytes, too short for a box header", data.len()));
    };
    let name = String::from_utf8_lossy(&kind).into_owned();
    let (header_len, size) = match u32::from_be_bytes(size) {
        0 => (8, left),
        1 => {
            let large = data
                .get(8..16)
                .and_then(|b| <[u8; 8]>::try_from(b).ok())
                .ok_or_else(|| format!("`{name}`: its 64-bit size is cut off"))?;
            (16, u64::from_be_bytes(large))
        }
        size => (8, u64::from(size)),
    };
    if size < header_len || size > left {
        return Err(format!(
            "`{name}` says it holds {size} bytes, but {left} are left"
        ));
    }
    Ok((kind, header_len, size))
}

/// A box's type and body.
type Mp4Box<'a> = ([u8; 4], &'a [u8]);

/// The child boxes of a box's body, in order.
fn children(mut data: &[u8]) -> Result<Vec<Mp4Box<'_>>, String> {
    let mut found = Vec::new();
    while !data.is_empty() {
        let left = u64::try_from(data.len()).unwrap_or(u64::MAX);
        let (kind, header_len, size) = box_header(data, left)?;
        let (header_len, size) = (
            usize::try_from(header_len).unwrap_or(usize::MAX),
            usize::try_from(size).unwrap_or(usize::MAX),
        );
        found.push((kind, &data[header_len..size]));
        data = &data[size..];
    }
    Ok(found)
}

fn child<'a>(data: &'a [u8], kind: &[u8; 4], inside: &str) -> Result<&'a [u8], String> {
    children(data)?
        .into_iter()
        .find(|(k, _)| k == kind)
        .map(|(_, body)| body)
        .ok_or_else(|| format!("no {} box in {inside}", String::from_utf8_lossy(kind)))
}

/// moov → trak → mdia → minf → stbl → stsd → avc1 (or avc3) → avcC → its first SPS.
fn sps_in_moov(moov: &[u8]) -> Result<Sps, String> {
    let mut tracks = 0;
    for (kind, trak) in children(moov).map_err(|e| format!("in moov: {e}"))? {
        if &kind != b"trak" {
            continue;
        }
        tracks += 1;
        let stbl = [(b"mdia", "trak"), (b"minf", "mdia"), (b"stbl", "minf")]
            .into_iter()
            .try_fold(trak, |body, (kind, inside)| child(body, kind, inside))?;
        // A full box: version and flags, then the entry count.
        let entries = child(stbl, b"stsd", "stbl")?
            .get(8..)
            .ok_or("the stsd box is cut off")?;
        for (kind, entry) in children(entries).map_err(|e| format!("in stsd: {e}"))? {
            if &kind != b"avc1" && &kind != b"avc3" {
                continue;
            }
            // A visual sample entry has 78 bytes of its own before its boxes.
            let boxes = entry.get(78..).ok_or("the avc1 sample entry is cut off")?;
            return avcc_sps(child(boxes, b"avcC", "avc1")?);
        }
    }
    Err(format!("no H.264 track among its {tracks} tracks"))
}

/// The first SPS of an AVCDecoderConfigurationRecord.
fn avcc_sps(avcc: &[u8]) -> Result<Sps, String> {
    let [version, _, _, _, _, count, rest @ ..] = avcc else {
        return Err(format!("the avcC box holds {} bytes, too few", avcc.len()));
    };
    if *version != 1 {
        return Err(format!("avcC version {version}, not 1"));
    }
    if count & 0x1f == 0 {
        return Err("the avcC box holds no SPS".to_owned());
    }
    let [high, low, sps @ ..] = rest else {
        return Err("the avcC's SPS length is cut off".to_owned());
    };
    let len = usize::from(u16::from_be_bytes([*high, *low]));
    let sps = sps.get(..len).ok_or_else(|| {
        format!(
            "the avcC's SPS should hold {len} bytes, but {} are left",
            sps.len()
        )
    })?;
    Sps::parse(sps).map_err(|e| format!("the avcC's SPS: {e}"))
}

#[cfg(test)]
mod tests;
