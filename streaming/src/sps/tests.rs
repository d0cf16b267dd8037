//! Real SPS units (each encoder's output, taken with `gst-launch-1.0 … ! h264parse !
//! filesink`) and ones built bit by bit for the paths no encoder here takes.

use super::*;

/// `banco stream` before the encoder's input was fixed to I420: the test pattern's
/// Y444_10LE went straight into x264 (1280x720).
const X264_HIGH444_10BIT: &[u8] = &[
    0x67, 0xf4, 0x00, 0x1f, 0x90, 0xd9, 0x68, 0x05, 0x00, 0x5b, 0xb0, 0x16, 0xa0, 0x20, 0x20, 0x28,
    0x00, 0x00, 0x03, 0x00, 0x08, 0x00, 0x00, 0x03, 0x01, 0xe4, 0x78, 0xc1, 0x95,
];
/// The same at 320x240, as the tests' cameras send it.
pub(crate) const X264_HIGH444_10BIT_SMALL: &[u8] = &[
    0x67, 0xf4, 0x00, 0x0d, 0x90, 0xd9, 0x68, 0x14, 0x1f, 0xb0, 0x16, 0xa0, 0xc0, 0xc0, 0xc8, 0x00,
    0x00, 0x03, 0x00, 0x08, 0x00, 0x00, 0x03, 0x01, 0xe4, 0x78, 0xa1, 0x55,
];
/// x264 `zerolatency ultrafast` from I420, `profile=constrained-baseline` (1280x720).
pub(crate) const X264_CONSTRAINED_BASELINE: &[u8] = &[
    0x67, 0x42, 0xc0, 0x1f, 0xda, 0x01, 0x40, 0x16, 0xec, 0x05, 0xa8, 0x08, 0x08, 0x0a, 0x00, 0x00,
    0x03, 0x00, 0x02, 0x00, 0x00, 0x03, 0x00, 0x79, 0x1e, 0x30, 0x65, 0x40,
];
/// OpenH264 `complexity=low rate-control=bitrate` (1280x720).
const OPENH264_CONSTRAINED_BASELINE: &[u8] = &[
    0x67, 0x42, 0xc0, 0x1f, 0x8c, 0x8d, 0x40, 0x28, 0x02, 0xdd, 0x00, 0xf0, 0x88, 0x46, 0xa0,
];
/// x264 `speed-preset=medium`, `profile=high`, 1920x1080 (coded as 1088, cropped).
const X264_HIGH_1080P: &[u8] = &[
    0x67, 0x64, 0x00, 0x28, 0xac, 0xd9, 0x40, 0x78, 0x02, 0x27, 0xe5, 0xc0, 0x5a, 0x80, 0x80, 0x80,
    0xa0, 0x00, 0x00, 0x03, 0x00, 0x20, 0x00, 0x00, 0x07, 0x91, 0xe3, 0x06, 0x32, 0xc0,
];
/// x264 `profile=main`, 640x360 at 25 fps.
const X264_MAIN: &[u8] = &[
    0x67, 0x4d, 0x40, 0x1e, 0xec, 0xa0, 0x50, 0x17, 0xfc, 0xb8, 0x0b, 0x50, 0x60, 0x60, 0x6a, 0x50,
    0x00, 0x00, 0x03, 0x00, 0x10, 0x00, 0x00, 0x03, 0x03, 0x28, 0xf1, 0x62, 0xd9, 0x60,
];
/// x264 Main with `nal-hrd=cbr`: the VUI carries HRD parameters (320x240).
const X264_MAIN_HRD: &[u8] = &[
    0x67, 0x4d, 0x40, 0x14, 0xec, 0xa0, 0xa0, 0xfd, 0x80, 0xb5, 0x06, 0x06, 0x06, 0xa5, 0x00, 0x00,
    0x03, 0x00, 0x01, 0x00, 0x00, 0x03, 0x00, 0x3c, 0xe0, 0x40, 0x00, 0xf4, 0x24, 0x00, 0x1e, 0x84,
    0xe4, 0xd3, 0x00, 0x78, 0xa1, 0x4c, 0xb0,
];
/// x264 `interlaced=true`, High, 720x576 fields.
const X264_HIGH_INTERLACED: &[u8] = &[
    0x67, 0x64, 0x00, 0x1e, 0xac, 0xd9, 0x40, 0xb4, 0x24, 0xd8, 0x0a, 0x50, 0x60, 0x60, 0x6a, 0x50,
    0x00, 0x00, 0x03, 0x00, 0x10, 0x00, 0x00, 0x03, 0x03, 0x29, 0xf1, 0x42, 0x99, 0x60,
];
/// x264 from Y42B: High 4:2:2, 8-bit (320x240).
const X264_HIGH422: &[u8] = &[
    0x67, 0x7a, 0x00, 0x0d, 0xbc, 0xb4, 0x0a, 0x0f, 0xd8, 0x0b, 0x50, 0x60, 0x60, 0x64, 0x00, 0x00,
    0x03, 0x00, 0x04, 0x00, 0x00, 0x03, 0x00, 0xf2, 0x3c, 0x50, 0xaa, 0x80,
];
/// x264 from I420_10LE: High 10 (320x240).
const X264_HIGH10: &[u8] = &[
    0x67, 0x6e, 0x00, 0x0d, 0xa6, 0xcb, 0x40, 0xa0, 0xfd, 0x80, 0xb5, 0x06, 0x06, 0x06, 0xa5, 0x00,
    0x00, 0x03, 0x00, 0x01, 0x00, 0x00, 0x03, 0x00, 0x3c, 0x8f, 0x14, 0x2a, 0xa0,
];
/// x264 from Y444: High 4:4:4 Predictive, 8-bit (320x240).
const X264_HIGH444_8BIT: &[u8] = &[
    0x67, 0xf4, 0x00, 0x0d, 0x91, 0x96, 0x81, 0x41, 0xfb, 0x01, 0x6a, 0x0c, 0x0c, 0x0c, 0x80, 0x00,
    0x00, 0x03, 0x00, 0x80, 0x00, 0x00, 0x1e, 0x47, 0x8a, 0x15, 0x50,
];

const REAL: &[(&str, &[u8])] = &[
    ("x264 High 4:4:4 10-bit", X264_HIGH444_10BIT),
    ("x264 High 4:4:4 10-bit 320x240", X264_HIGH444_10BIT_SMALL),
    ("x264 Constrained Baseline", X264_CONSTRAINED_BASELINE),
    (
        "OpenH264 Constrained Baseline",
        OPENH264_CONSTRAINED_BASELINE,
    ),
    ("x264 High 1080p", X264_HIGH_1080P),
    ("x264 Main", X264_MAIN),
    ("x264 Main with HRD", X264_MAIN_HRD),
    ("x264 High interlaced", X264_HIGH_INTERLACED),
    ("x264 High 4:2:2", X264_HIGH422),
    ("x264 High 10", X264_HIGH10),
    ("x264 High 4:4:4 8-bit", X264_HIGH444_8BIT),
];

fn sps(bytes: &[u8]) -> Sps {
    Sps::parse(bytes).unwrap_or_else(|e| panic!("{e}: {bytes:02x?}"))
}

#[test]
fn real_units_read_to_their_profile_chroma_depth_and_size() {
    // (unit, shown as, playable)
    let cases: &[(&[u8], &str, bool)] = &[
        (
            X264_HIGH444_10BIT,
            "High 4:4:4 Predictive, level 3.1, 4:4:4, 10-bit, 1280x720",
            false,
        ),
        (
            X264_HIGH444_10BIT_SMALL,
            "High 4:4:4 Predictive, level 1.3, 4:4:4, 10-bit, 320x240",
            false,
        ),
        (
            X264_CONSTRAINED_BASELINE,
            "Constrained Baseline, level 3.1, 4:2:0, 8-bit, 1280x720",
            true,
        ),
        (
            OPENH264_CONSTRAINED_BASELINE,
            "Constrained Baseline, level 3.1, 4:2:0, 8-bit, 1280x720",
            true,
        ),
        (
            X264_HIGH_1080P,
            "High, level 4.0, 4:2:0, 8-bit, 1920x1080",
            true,
        ),
        (X264_MAIN, "Main, level 3.0, 4:2:0, 8-bit, 640x360", true),
        (
            X264_MAIN_HRD,
            "Main, level 2.0, 4:2:0, 8-bit, 320x240",
            true,
        ),
        (
            X264_HIGH_INTERLACED,
            "High, level 3.0, 4:2:0, 8-bit, 720x576 interlaced",
            true,
        ),
        (
            X264_HIGH422,
            "High 4:2:2, level 1.3, 4:2:2, 8-bit, 320x240",
            false,
        ),
        (
            X264_HIGH10,
            "High 10, level 1.3, 4:2:0, 10-bit, 320x240",
            false,
        ),
        (
            X264_HIGH444_8BIT,
            "High 4:4:4 Predictive, level 1.3, 4:4:4, 8-bit, 320x240",
            false,
        ),
    ];
    for &(bytes, shown, is_playable) in cases {
        let read = sps(bytes);
        assert_eq!(read.to_string(), shown);
        assert_eq!(playable(&read).is_ok(), is_playable, "{shown}");
        // The same with an Annex-B start code of either length.
        assert_eq!(sps(&[&[0, 0, 0, 1][..], bytes].concat()), read);
        assert_eq!(sps(&[&[0, 0, 1][..], bytes].concat()), read);
    }
}

#[test]
fn the_fields_are_read_as_written() {
    let before = sps(X264_HIGH444_10BIT);
    assert_eq!(
        before,
        Sps {
            profile_idc: 244,
            constraint_flags: 0,
            level_idc: 31,
            chroma_format_idc: 3,
            bit_depth_luma: 10,
            bit_depth_chroma: 10,
            width: 1280,
            height: 720,
            frame_mbs_only: true,
        }
    );
    let after = sps(X264_CONSTRAINED_BASELINE);
    assert_eq!(
        (after.profile_idc, after.constraint_flags, after.level_idc),
        (66, 0xc0, 31),
        "constraint_set0 and set1"
    );
    // Main has no chroma or depth fields: 4:2:0 and 8-bit by definition.
    let main = sps(X264_MAIN);
    assert_eq!(
        (
            main.chroma_format_idc,
            main.bit_depth_luma,
            main.bit_depth_chroma
        ),
        (1, 8, 8)
    );
}

#[test]
fn what_is_not_playable_is_named() {
    let err = playable(&sps(X264_HIGH444_10BIT)).expect_err("4:4:4 10-bit");
    assert_eq!(
        err,
        NotPlayable {
            profile: Some(Profile::High444Predictive),
            chroma: Some(Chroma::Yuv444),
            bit_depth: Some((10, 10)),
        }
    );
    assert_eq!(
        err.to_string(),
        "H.264 that browsers and phones do not play: profile High 4:4:4 Predictive (they \
         play Constrained Baseline, Main or High); chroma 4:4:4 (they need 4:2:0); 10-bit \
         samples (they need 8-bit)"
    );
    let err = playable(&sps(X264_HIGH10)).expect_err("10-bit");
    assert_eq!(
        (err.profile, err.chroma, err.bit_depth),
        (Some(Profile::High10), None, Some((10, 10)))
    );
    let err = playable(&sps(X264_HIGH422)).expect_err("4:2:2");
    assert_eq!(
        (err.profile, err.chroma, err.bit_depth),
        (Some(Profile::High422), Some(Chroma::Yuv422), None)
    );
    // Each fault alone, on an otherwise playable SPS.
    let good = sps(X264_HIGH_1080P);
    let baseline = Sps {
        profile_idc: 66,
        constraint_flags: 0,
        ..good
    };
    assert_eq!(
        playable(&baseline)
            .expect_err("Baseline without constraint_set1")
            .profile,
        Some(Profile::Baseline)
    );
    let grey = Sps {
        chroma_format_idc: 0,
        ..good
    };
    let err = playable(&grey).expect_err("monochrome");
    assert!(
        err.to_string().ends_with("chroma 4:0:0 (they need 4:2:0)"),
        "{err}"
    );
    let deep_chroma = Sps {
        bit_depth_chroma: 9,
        ..good
    };
    let err = playable(&deep_chroma).expect_err("9-bit chroma");
    assert!(
        err.to_string()
            .ends_with("8-bit luma, 9-bit chroma samples (they need 8-bit)"),
        "{err}"
    );
}

#[test]
fn every_cut_of_a_real_unit_is_refused_naming_where_it_ends() {
    for &(name, bytes) in REAL {
        for len in 0..bytes.len() {
            let cut = &bytes[..len];
            match Sps::parse(cut) {
                Err(SpsError::Empty) => assert_eq!(len, 0, "{name}"),
                Err(SpsError::Truncated(_)) => {}
                other => panic!("{name} cut to {len} bytes: {other:?}"),
            }
        }
    }
    assert_eq!(
        Sps::parse(&X264_MAIN[..1]),
        Err(SpsError::Truncated("profile_idc"))
    );
    assert_eq!(
        Sps::parse(&X264_MAIN[..4]),
        Err(SpsError::Truncated("seq_parameter_set_id"))
    );
    assert_eq!(
        SpsError::Truncated("seq_parameter_set_id").to_string(),
        "SPS truncated at seq_parameter_set_id"
    );
}

#[test]
fn other_units_and_empty_input_are_refused() {
    assert_eq!(Sps::parse(&[]), Err(SpsError::Empty));
    assert_eq!(Sps::parse(&[0, 0, 0, 1]), Err(SpsError::Empty));
    let pps = [0x68, 0xce, 0x3c, 0x80];
    assert_eq!(Sps::parse(&pps), Err(SpsError::NotSps(8)));
    assert_eq!(
        SpsError::NotSps(8).to_string(),
        "not an SPS: NAL unit type 8 (an SPS is 7)"
    );
}

#[test]
fn arbitrary_bytes_never_panic() {
    // xorshift: the same inputs every run.
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..20_000 {
        let len = usize::try_from(next() % 48).unwrap_or(0);
        let mut bytes: Vec<u8> = (0..len).map(|_| next().to_le_bytes()[0]).collect();
        if let Some(first) = bytes.first_mut() {
            *first = 0x67;
        }
        let _ = Sps::parse(&bytes);
    }
    // And every real unit with each byte after the header replaced.
    for &(_, bytes) in REAL {
        for at in 1..bytes.len() {
            for value in [0x00, 0x03, 0x7f, 0x80, 0xff] {
                let mut damaged = bytes.to_vec();
                damaged[at] = value;
                let _ = Sps::parse(&damaged);
            }
        }
    }
}

/// Writes an SPS field by field, for the paths the encoders here do not take.
#[derive(Default)]
struct Writer {
    bits: Vec<bool>,
}

impl Writer {
    fn u(&mut self, count: u32, value: u64) -> &mut Writer {
        for i in (0..count).rev() {
            self.bits.push(value >> i & 1 == 1);
        }
        self
    }

    fn ue(&mut self, value: u64) -> &mut Writer {
        let code = value + 1;
        let len = 64 - code.leading_zeros();
        self.u(len - 1, 0).u(len, code)
    }

    fn se(&mut self, value: i64) -> &mut Writer {
        let code = if value > 0 {
            value.unsigned_abs() * 2 - 1
        } else {
            value.unsigned_abs() * 2
        };
        self.ue(code)
    }

    /// The NAL unit: header, stop bit, alignment, emulation prevention.
    fn unit(&mut self) -> Vec<u8> {
        self.bits.push(true);
        while !self.bits.len().is_multiple_of(8) {
            self.bits.push(false);
        }
        let rbsp = self.bits.chunks(8).map(|bits| {
            bits.iter()
                .fold(0u8, |byte, &bit| byte << 1 | u8::from(bit))
        });
        let mut unit = vec![0x67];
        let mut zeros = 0;
        for byte in rbsp {
            if zeros == 2 && byte <= 3 {
                unit.push(3);
                zeros = 0;
            }
            zeros = if byte == 0 { zeros + 1 } else { 0 };
            unit.push(byte);
        }
        unit
    }
}

/// High profile, 320x240, with `tail` writing everything after the bit depths.
fn high(chroma_format_idc: u64, depth_minus8: u64, tail: impl Fn(&mut Writer)) -> Vec<u8> {
    let mut w = Writer::default();
    w.u(8, 100).u(8, 0).u(8, 13).ue(0).ue(chroma_format_idc);
    w.ue(depth_minus8).ue(depth_minus8).u(1, 0);
    tail(&mut w);
    w.unit()
}

/// Everything after the scaling matrices: frame_num, a pic_order_cnt of type 1, 320x240.
fn rest(w: &mut Writer) {
    w.ue(0).ue(1).u(1, 0).se(-2).se(3).ue(2).se(1).se(-1);
    w.ue(1)
        .u(1, 0)
        .ue(19)
        .ue(14)
        .u(1, 1)
        .u(1, 1)
        .u(1, 0)
        .u(1, 0);
}

#[test]
fn scaling_matrices_and_pic_order_type_1_are_read_past() {
    let bytes = high(1, 0, |w| {
        w.u(1, 1);
        // List 0 written in full, list 1 "use the default" (next scale 0 at once), the
        // rest absent.
        w.u(1, 1);
        for delta in [0, 2, -3, 5, 1, -1, 0, 4, -8, 7, 3, -2, 6, 0, -5, 1] {
            w.se(delta);
        }
        w.u(1, 1).se(-8);
        w.u(6, 0);
        rest(w);
    });
    let read = sps(&bytes);
    assert_eq!(read.to_string(), "High, level 1.3, 4:2:0, 8-bit, 320x240");
    assert!(playable(&read).is_ok());
}

#[test]
fn out_of_range_fields_and_a_missing_stop_bit_are_refused() {
    let too_deep = high(1, 7, |w| {
        w.u(1, 0);
        rest(w);
    });
    assert_eq!(
        Sps::parse(&too_deep),
        Err(SpsError::OutOfRange {
            field: "bit_depth_luma_minus8",
            value: 7
        })
    );
    let chroma = high(4, 0, |w| {
        w.u(1, 0);
        rest(w);
    });
    assert_eq!(
        Sps::parse(&chroma),
        Err(SpsError::OutOfRange {
            field: "chroma_format_idc",
            value: 4
        })
    );
    // A delta_scale beyond a byte's range.
    let delta = high(1, 0, |w| {
        w.u(1, 1).u(1, 1).se(200);
    });
    assert_eq!(
        Sps::parse(&delta),
        Err(SpsError::OutOfRange {
            field: "delta_scale",
            value: 200
        })
    );
    // 33 zeros where an exp-Golomb code starts.
    let long = high(1, 0, |w| {
        w.u(1, 0).u(33, 0).u(8, 0xff);
    });
    assert_eq!(
        Sps::parse(&long),
        Err(SpsError::CodeTooLong("log2_max_frame_num_minus4"))
    );
    // Cropped to nothing.
    let cropped = high(1, 0, |w| {
        w.u(1, 0)
            .ue(0)
            .ue(2)
            .ue(1)
            .u(1, 0)
            .ue(0)
            .ue(0)
            .u(1, 1)
            .u(1, 1);
        w.u(1, 1).ue(4).ue(4).ue(0).ue(0).u(1, 0);
    });
    assert_eq!(
        Sps::parse(&cropped),
        Err(SpsError::OutOfRange {
            field: "pic_width_in_mbs_minus1",
            value: 16
        })
    );
    // A field more than the SPS holds: a one bit where the stop bit should be is taken as
    // it, so write a zero there and the stop bit after.
    let extra = high(1, 0, |w| {
        w.u(1, 0);
        rest(w);
        w.u(1, 0);
    });
    assert_eq!(Sps::parse(&extra), Err(SpsError::NoStopBit));
}

/// A unit as the encoder makes it: a keyframe carries `sps` and a PPS in `codec_config` and
/// before its IDR slice in the data.
fn unit(sequence: u64, sps: Option<&[u8]>, data_sps: Option<&[u8]>) -> pb::VideoAccessUnit {
    let with_pps = |sps: &[u8]| {
        [
            &[0, 0, 0, 1][..],
            sps,
            &[0, 0, 0, 1, 0x68, 0xce, 0x3c, 0x80],
        ]
        .concat()
    };
    let slice: &[u8] = if sps.is_some() || data_sps.is_some() {
        &[0, 0, 0, 1, 0x65, 0x88, 0x84, 0x00]
    } else {
        &[0, 0, 0, 1, 0x41, 0x9a, 0x24, 0x00]
    };
    pb::VideoAccessUnit {
        table_id: "T01".to_owned(),
        sequence,
        keyframe: sps.is_some() || data_sps.is_some(),
        codec: "h264".to_owned(),
        data: [data_sps.map(with_pps).unwrap_or_default(), slice.to_vec()].concat(),
        codec_config: sps.map(with_pps),
        ..Default::default()
    }
}

#[test]
fn a_streams_keyframes_are_read_and_judged_each() {
    let good = Some(X264_CONSTRAINED_BASELINE);
    let bad = Some(X264_HIGH444_10BIT_SMALL);
    let stream = [
        unit(1, good, good),
        unit(2, None, None),
        unit(3, good, good),
    ];
    assert_eq!(
        playable_keyframes(&stream),
        Ok(vec![sps(X264_CONSTRAINED_BASELINE); 2])
    );

    let cases: Vec<(Vec<pb::VideoAccessUnit>, &str)> = vec![
        (vec![], "no keyframe among 0 units"),
        (vec![unit(4, None, None)], "no keyframe among 1 units"),
        (
            vec![unit(1, good, good), unit(2, None, None), unit(3, bad, bad)],
            "keyframe 3 (High 4:4:4 Predictive, level 1.3, 4:4:4, 10-bit, 320x240): H.264 \
             that browsers and phones do not play: profile High 4:4:4 Predictive (they play \
             Constrained Baseline, Main or High); chroma 4:4:4 (they need 4:2:0); 10-bit \
             samples (they need 8-bit)",
        ),
        (
            vec![unit(5, good, bad)],
            "keyframe 5: its codec_config says Constrained Baseline, level 3.1, 4:2:0, \
             8-bit, 1280x720, its data High 4:4:4 Predictive, level 1.3, 4:4:4, 10-bit, \
             320x240",
        ),
        (
            vec![unit(6, None, good)],
            "keyframe 6, its codec_config: no SPS among the NAL units",
        ),
        (
            vec![unit(7, good, None)],
            "keyframe 7, its data: no SPS among the NAL units",
        ),
        (
            vec![unit(8, Some(&X264_CONSTRAINED_BASELINE[..9]), good)],
            "keyframe 8, its codec_config: SPS truncated at aspect_ratio_idc",
        ),
    ];
    for (units, said) in cases {
        let err = playable_keyframes(&units).expect_err(said);
        assert_eq!(err.to_string(), said);
    }
}
