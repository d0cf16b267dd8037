//! MP4s built box by box around real SPS units: where the `avcC` is found, and every way
//! a file can fail to hold one, each refused with what is wrong.

use super::*;
use crate::sps::tests::{X264_CONSTRAINED_BASELINE, X264_HIGH444_10BIT_SMALL};

fn bx(kind: &[u8; 4], body: &[u8]) -> Vec<u8> {
    let size = u32::try_from(body.len() + 8).unwrap_or(u32::MAX);
    [&size.to_be_bytes()[..], kind, body].concat()
}

fn avcc(sps: &[u8]) -> Vec<u8> {
    let pps = [0x68, 0xce, 0x3c, 0x80];
    let len = |b: &[u8]| u16::try_from(b.len()).unwrap_or(0).to_be_bytes();
    [
        &[1, sps[1], sps[2], sps[3], 0xff, 0xe1][..],
        &len(sps),
        sps,
        &[1],
        &len(&pps),
        &pps,
    ]
    .concat()
}

/// A track whose sample description holds `entry` (an avc1 box, or another codec's).
fn trak(entry: &[u8]) -> Vec<u8> {
    let stsd = bx(b"stsd", &[&[0, 0, 0, 0, 0, 0, 0, 1][..], entry].concat());
    let stbl = bx(b"stbl", &[stsd, bx(b"stts", &[0; 8])].concat());
    let minf = bx(b"minf", &[bx(b"vmhd", &[0; 12]), stbl].concat());
    let mdia = bx(b"mdia", &[bx(b"mdhd", &[0; 24]), minf].concat());
    bx(b"trak", &[bx(b"tkhd", &[0; 84]), mdia].concat())
}

fn avc1(avcc_body: &[u8]) -> Vec<u8> {
    bx(
        b"avc1",
        &[
            &[0u8; 78][..],
            &bx(b"avcC", avcc_body),
            &bx(b"pasp", &[0; 8]),
        ]
        .concat(),
    )
}

fn mp4(moov_body: &[u8]) -> Vec<u8> {
    [
        bx(b"ftyp", b"isomiso2avc1mp41"),
        bx(b"mdat", &[0x55; 300]),
        bx(b"moov", moov_body),
    ]
    .concat()
}

fn written(bytes: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("clip.mp4");
    std::fs::write(&path, bytes).expect("write");
    (dir, path)
}

fn read(bytes: &[u8]) -> Result<Sps, String> {
    let (_dir, path) = written(bytes);
    mp4_sps(&path).map_err(|e| match e {
        StreamingError::BadMp4 { problem, .. } => problem,
        other => panic!("not a BadMp4: {other}"),
    })
}

#[test]
fn the_sps_is_read_from_the_avcc_box_of_the_video_track() {
    let good = mp4(&[
        bx(b"mvhd", &[0; 100]),
        trak(&avc1(&avcc(X264_CONSTRAINED_BASELINE))),
    ]
    .concat());
    assert_eq!(
        read(&good),
        Ok(Sps::parse(X264_CONSTRAINED_BASELINE).expect("sps"))
    );
    // After an audio track; in a moov written first with a 64-bit size; in avc3.
    let audio = trak(&bx(b"mp4a", &[0; 28]));
    let after_audio = mp4(&[audio, trak(&avc1(&avcc(X264_HIGH444_10BIT_SMALL)))].concat());
    assert_eq!(
        read(&after_audio),
        Ok(Sps::parse(X264_HIGH444_10BIT_SMALL).expect("sps"))
    );
    let body = trak(&avc1(&avcc(X264_CONSTRAINED_BASELINE)));
    let large = u64::try_from(body.len() + 16).unwrap_or(0).to_be_bytes();
    let moov_first = [
        bx(b"ftyp", b"isom"),
        [&[0, 0, 0, 1][..], b"moov", &large, &body].concat(),
        bx(b"mdat", &[0; 10]),
    ]
    .concat();
    assert!(read(&moov_first).is_ok());
    let mut avc3 = avc1(&avcc(X264_CONSTRAINED_BASELINE));
    avc3[4..8].copy_from_slice(b"avc3");
    assert!(read(&mp4(&trak(&avc3))).is_ok());
}

#[test]
fn a_file_without_an_h264_sps_is_refused_naming_what_is_missing() {
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (Vec::new(), "no moov box"),
        (bx(b"ftyp", b"isom"), "no moov box"),
        (
            [bx(b"ftyp", b"isom"), vec![0, 0]].concat(),
            "2 bytes, too short for a box header",
        ),
        (
            [&[0, 0, 1, 0][..], b"mdat", &[0; 10]].concat(),
            "`mdat` says it holds 256 bytes, but 18 are left",
        ),
        (
            mp4(&bx(b"mvhd", &[0; 100])),
            "no H.264 track among its 0 tracks",
        ),
        (
            mp4(&trak(&bx(b"mp4a", &[0; 28]))),
            "no H.264 track among its 1 tracks",
        ),
        (
            mp4(&bx(b"trak", &bx(b"tkhd", &[0; 84]))),
            "no mdia box in trak",
        ),
        (
            mp4(&trak(&bx(b"avc1", &[0; 40]))),
            "the avc1 sample entry is cut off",
        ),
        (
            mp4(&trak(&bx(
                b"avc1",
                &[&[0u8; 78][..], &bx(b"pasp", &[0; 8])].concat(),
            ))),
            "no avcC box in avc1",
        ),
        (
            mp4(&trak(&avc1(&[1, 66, 0]))),
            "the avcC box holds 3 bytes, too few",
        ),
        (
            mp4(&trak(&avc1(&[2, 66, 0, 31, 0xff, 0xe1, 0, 1, 0x67]))),
            "avcC version 2, not 1",
        ),
        (
            mp4(&trak(&avc1(&[1, 66, 0, 31, 0xff, 0xe0]))),
            "the avcC box holds no SPS",
        ),
        (
            mp4(&trak(&avc1(&[1, 66, 0, 31, 0xff, 0xe1, 0, 40, 0x67, 0x42]))),
            "the avcC's SPS should hold 40 bytes, but 2 are left",
        ),
        (
            mp4(&trak(&avc1(&avcc(&X264_CONSTRAINED_BASELINE[..6])))),
            "the avcC's SPS: SPS truncated at",
        ),
    ];
    for (bytes, expected) in cases {
        let err = read(&bytes).expect_err(expected);
        assert!(err.contains(expected), "`{err}` should say `{expected}`");
    }
    let missing = std::path::Path::new("/nonexistent/clip.mp4");
    let err = mp4_sps(missing).expect_err("no file");
    assert!(
        err.to_string()
            .starts_with("/nonexistent/clip.mp4: cannot open"),
        "{err}"
    );
}

#[test]
fn every_cut_of_a_good_file_is_refused_and_none_panics() {
    let good = mp4(&trak(&avc1(&avcc(X264_CONSTRAINED_BASELINE))));
    for len in 0..good.len() {
        assert!(read(&good[..len]).is_err(), "cut to {len} bytes");
    }
    // Every byte of the moov damaged in turn: an error or an SPS, never a panic.
    let moov_at = good.len() - trak(&[]).len();
    for at in moov_at..good.len() {
        for value in [0x00, 0x01, 0x08, 0xff] {
            let mut damaged = good.clone();
            damaged[at] = value;
            let _ = read(&damaged);
        }
    }
}
