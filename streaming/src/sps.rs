//! The H.264 sequence parameter set (ITU-T H.264, 7.3.2.1.1), read whole so that a stream
//! can be judged before anyone is sent it: browsers, phones and hardware decoders play 8-bit
//! 4:2:0 in the Constrained Baseline, Main or High profile, and nothing else reliably.
//!
//! [`Sps::parse`] reads every field up to the stop bit (a cut anywhere is refused, never a
//! panic) and keeps the ones that say who can decode the stream; [`playable`] names what
//! in them a browser or a phone would not play; [`playable_keyframes`] judges a stream's
//! units so.

use std::fmt;

use banco_wire::pb;

/// What an SPS says about who can decode the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sps {
    pub profile_idc: u8,
    /// `constraint_set0_flag` (the top bit) to `constraint_set5_flag`, as in the SPS.
    pub constraint_flags: u8,
    pub level_idc: u8,
    /// 0 monochrome, 1 4:2:0, 2 4:2:2, 3 4:4:4; 1 for profiles without the field.
    pub chroma_format_idc: u8,
    pub bit_depth_luma: u8,
    pub bit_depth_chroma: u8,
    /// The picture size after cropping, in pixels.
    pub width: u32,
    pub height: u32,
    /// False when pictures may be coded as fields (interlaced).
    pub frame_mbs_only: bool,
}

/// Why bytes are not an SPS this reader can read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpsError {
    #[error("no SPS: the NAL unit is empty")]
    Empty,
    #[error("no SPS among the NAL units")]
    Missing,
    #[error("not an SPS: NAL unit type {0} (an SPS is 7)")]
    NotSps(u8),
    #[error("SPS truncated at {0}")]
    Truncated(&'static str),
    #[error("SPS field {field} is {value}, beyond what H.264 allows")]
    OutOfRange { field: &'static str, value: u64 },
    #[error("SPS field {0}: an exp-Golomb code longer than 32 bits")]
    CodeTooLong(&'static str),
    #[error("SPS has more data where its stop bit should be: damaged, or not H.264")]
    NoStopBit,
}

/// The profile, as named in H.264 Annex A from `profile_idc` and the constraint flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    ConstrainedBaseline,
    Baseline,
    Main,
    Extended,
    High,
    High10,
    High422,
    High444Predictive,
    Cavlc444Intra,
    /// Scalable, multiview, stereo or depth profiles, or an unknown value.
    Other(u8),
}

impl Profile {
    /// Every browser, phone and hardware decoder plays these three.
    pub fn playable(self) -> bool {
        matches!(
            self,
            Profile::ConstrainedBaseline | Profile::Main | Profile::High
        )
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Profile::ConstrainedBaseline => f.write_str("Constrained Baseline"),
            Profile::Baseline => f.write_str("Baseline"),
            Profile::Main => f.write_str("Main"),
            Profile::Extended => f.write_str("Extended"),
            Profile::High => f.write_str("High"),
            Profile::High10 => f.write_str("High 10"),
            Profile::High422 => f.write_str("High 4:2:2"),
            Profile::High444Predictive => f.write_str("High 4:4:4 Predictive"),
            Profile::Cavlc444Intra => f.write_str("CAVLC 4:4:4 Intra"),
            Profile::Other(idc) => write!(f, "profile_idc {idc}"),
        }
    }
}

/// The chroma subsampling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chroma {
    Monochrome,
    Yuv420,
    Yuv422,
    Yuv444,
}

impl fmt::Display for Chroma {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Chroma::Monochrome => "4:0:0",
            Chroma::Yuv420 => "4:2:0",
            Chroma::Yuv422 => "4:2:2",
            Chroma::Yuv444 => "4:4:4",
        })
    }
}

/// What in an SPS browsers and phones do not play: each field is set when it is wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.describe())]
pub struct NotPlayable {
    pub profile: Option<Profile>,
    pub chroma: Option<Chroma>,
    /// Luma and chroma bit depths, when either is not 8.
    pub bit_depth: Option<(u8, u8)>,
}

impl NotPlayable {
    fn describe(&self) -> String {
        let mut wrong = Vec::new();
        if let Some(profile) = self.profile {
            wrong.push(format!(
                "profile {profile} (they play Constrained Baseline, Main or High)"
            ));
        }
        if let Some(chroma) = self.chroma {
            wrong.push(format!("chroma {chroma} (they need 4:2:0)"));
        }
        if let Some((luma, chroma)) = self.bit_depth {
            let depth = if luma == chroma {
                format!("{luma}-bit")
            } else {
                format!("{luma}-bit luma, {chroma}-bit chroma")
            };
            wrong.push(format!("{depth} samples (they need 8-bit)"));
        }
        format!(
            "H.264 that browsers and phones do not play: {}",
            wrong.join("; ")
        )
    }
}

/// Whether browsers, phones and hardware decoders play a stream with this SPS: 8-bit 4:2:0
/// in the Constrained Baseline, Main or High profile.
pub fn playable(sps: &Sps) -> Result<(), NotPlayable> {
    let profile = sps.profile();
    let chroma = sps.chroma();
    let not = NotPlayable {
        profile: (!profile.playable()).then_some(profile),
        chroma: (chroma != Chroma::Yuv420).then_some(chroma),
        bit_depth: (sps.bit_depth_luma != 8 || sps.bit_depth_chroma != 8)
            .then_some((sps.bit_depth_luma, sps.bit_depth_chroma)),
    };
    if not.profile.is_none() && not.chroma.is_none() && not.bit_depth.is_none() {
        Ok(())
    } else {
        Err(not)
    }
}

/// Why a stream's keyframes are not all ones browsers and phones play.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyframeError {
    #[error("no keyframe among {0} units")]
    NoKeyframe(usize),
    #[error("keyframe {sequence}, its {place}: {error}")]
    Unreadable {
        sequence: u64,
        place: &'static str,
        error: SpsError,
    },
    #[error("keyframe {sequence}: its codec_config says {config}, its data {data}")]
    Disagree {
        sequence: u64,
        config: Sps,
        data: Sps,
    },
    #[error("keyframe {sequence} ({sps}): {error}")]
    NotPlayable {
        sequence: u64,
        sps: Sps,
        error: NotPlayable,
    },
}

/// The SPS of every keyframe among `units`, in order, each required to be one browsers and
/// phones play. A keyframe carries it twice, in `codec_config` (what a player joining there
/// is set up with) and in its data (what the decoder then reads): both must say the same.
pub fn playable_keyframes(units: &[pb::VideoAccessUnit]) -> Result<Vec<Sps>, KeyframeError> {
    let mut found = Vec::new();
    for unit in units.iter().filter(|u| u.keyframe) {
        let sequence = unit.sequence;
        let read = |place, data: &[u8]| {
            Sps::from_annex_b(data).map_err(|error| KeyframeError::Unreadable {
                sequence,
                place,
                error,
            })
        };
        let config = read(
            "codec_config",
            unit.codec_config.as_deref().unwrap_or_default(),
        )?;
        let data = read("data", &unit.data)?;
        if config != data {
            return Err(KeyframeError::Disagree {
                sequence,
                config,
                data,
            });
        }
        playable(&data).map_err(|error| KeyframeError::NotPlayable {
            sequence,
            sps: data,
            error,
        })?;
        found.push(data);
    }
    if found.is_empty() {
        return Err(KeyframeError::NoKeyframe(units.len()));
    }
    Ok(found)
}

/// Profiles whose SPS carries the chroma format, bit depths and scaling matrices (7.3.2.1.1).
const HIGH_PROFILES: [u8; 13] = [100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135];

impl Sps {
    /// Reads an SPS NAL unit, with or without its Annex-B start code.
    pub fn parse(nal: &[u8]) -> Result<Sps, SpsError> {
        let nal = strip_start_code(nal);
        let (&header, payload) = nal.split_first().ok_or(SpsError::Empty)?;
        let nal_type = header & 0x1f;
        if nal_type != crate::h264::NAL_SPS {
            return Err(SpsError::NotSps(nal_type));
        }
        let rbsp = unescape(payload);
        let mut r = Bits::new(&rbsp);
        let profile_idc = r.byte("profile_idc")?;
        let constraint_flags = r.byte("constraint_set flags")?;
        let level_idc = r.byte("level_idc")?;
        r.ue_max("seq_parameter_set_id", 31)?;
        let (mut chroma_format_idc, mut separate_planes) = (1, false);
        let (mut bit_depth_luma, mut bit_depth_chroma) = (8, 8);
        if HIGH_PROFILES.contains(&profile_idc) {
            chroma_format_idc = r.ue_max("chroma_format_idc", 3)?;
            if chroma_format_idc == 3 {
                separate_planes = r.flag("separate_colour_plane_flag")?;
            }
            bit_depth_luma = 8 + r.ue_max("bit_depth_luma_minus8", 6)?;
            bit_depth_chroma = 8 + r.ue_max("bit_depth_chroma_minus8", 6)?;
            r.flag("qpprime_y_zero_transform_bypass_flag")?;
            if r.flag("seq_scaling_matrix_present_flag")? {
                let lists = if chroma_format_idc == 3 { 12 } else { 8 };
                for i in 0..lists {
                    if r.flag("seq_scaling_list_present_flag")? {
                        skip_scaling_list(&mut r, if i < 6 { 16 } else { 64 })?;
                    }
                }
            }
        }
        r.ue_max("log2_max_frame_num_minus4", 12)?;
        match r.ue_max("pic_order_cnt_type", 2)? {
            0 => {
                r.ue_max("log2_max_pic_order_cnt_lsb_minus4", 12)?;
            }
            1 => {
                r.flag("delta_pic_order_always_zero_flag")?;
                r.se("offset_for_non_ref_pic")?;
                r.se("offset_for_top_to_bottom_field")?;
                let cycle = r.ue_max("num_ref_frames_in_pic_order_cnt_cycle", 255)?;
                for _ in 0..cycle {
                    r.se("offset_for_ref_frame")?;
                }
            }
            _ => {}
        }
        r.ue("max_num_ref_frames")?;
        r.flag("gaps_in_frame_num_value_allowed_flag")?;
        let width_mbs = u64::from(r.ue("pic_width_in_mbs_minus1")?) + 1;
        let height_units = u64::from(r.ue("pic_height_in_map_units_minus1")?) + 1;
        let frame_mbs_only = r.flag("frame_mbs_only_flag")?;
        if !frame_mbs_only {
            r.flag("mb_adaptive_frame_field_flag")?;
        }
        r.flag("direct_8x8_inference_flag")?;
        let mut crop = [0u64; 4];
        if r.flag("frame_cropping_flag")? {
            for (offset, field) in crop.iter_mut().zip([
                "frame_crop_left_offset",
                "frame_crop_right_offset",
                "frame_crop_top_offset",
                "frame_crop_bottom_offset",
            ]) {
                *offset = u64::from(r.ue(field)?);
            }
        }
        if r.flag("vui_parameters_present_flag")? {
            skip_vui(&mut r)?;
        }
        r.stop_bit()?;

        // Cropping is counted in chroma samples (7.4.2.1.1, table 6-1).
        let chroma_array_type = if separate_planes {
            0
        } else {
            chroma_format_idc
        };
        let (sub_width, sub_height) = match chroma_array_type {
            1 => (2, 2),
            2 => (2, 1),
            _ => (1, 1),
        };
        let field_factor = if frame_mbs_only { 1 } else { 2 };
        let width = size(
            "pic_width_in_mbs_minus1",
            width_mbs * 16,
            sub_width * (crop[0] + crop[1]),
        )?;
        let height = size(
            "pic_height_in_map_units_minus1",
            field_factor * height_units * 16,
            sub_height * field_factor * (crop[2] + crop[3]),
        )?;
        Ok(Sps {
            profile_idc,
            constraint_flags,
            level_idc,
            chroma_format_idc,
            bit_depth_luma,
            bit_depth_chroma,
            width,
            height,
            frame_mbs_only,
        })
    }

    /// The SPS of an Annex-B access unit or parameter sets (`codec_config`).
    pub fn from_annex_b(data: &[u8]) -> Result<Sps, SpsError> {
        Sps::parse(crate::h264::sps(data).ok_or(SpsError::Missing)?)
    }

    /// The profile by name: Baseline with `constraint_set1_flag` is Constrained Baseline
    /// (no FMO, ASO or redundant slices), which is what every decoder takes.
    pub fn profile(&self) -> Profile {
        let set1 = self.constraint_flags & 0x40 != 0;
        match self.profile_idc {
            66 if set1 => Profile::ConstrainedBaseline,
            66 => Profile::Baseline,
            77 => Profile::Main,
            88 => Profile::Extended,
            100 => Profile::High,
            110 => Profile::High10,
            122 => Profile::High422,
            244 => Profile::High444Predictive,
            44 => Profile::Cavlc444Intra,
            other => Profile::Other(other),
        }
    }

    pub fn chroma(&self) -> Chroma {
        match self.chroma_format_idc {
            0 => Chroma::Monochrome,
            1 => Chroma::Yuv420,
            2 => Chroma::Yuv422,
            _ => Chroma::Yuv444,
        }
    }

    /// The level as written in Annex A: `3.1` for `level_idc` 31; `1b` is 11 with
    /// `constraint_set3_flag` in the Baseline, Main and Extended profiles, 9 in the others.
    pub fn level(&self) -> String {
        let baseline = matches!(self.profile_idc, 66 | 77 | 88);
        let set3 = self.constraint_flags & 0x10 != 0;
        if (baseline && self.level_idc == 11 && set3) || (!baseline && self.level_idc == 9) {
            return "1b".to_owned();
        }
        format!("{}.{}", self.level_idc / 10, self.level_idc % 10)
    }
}

impl fmt::Display for Sps {
    /// `Constrained Baseline, level 3.1, 4:2:0, 8-bit, 1280x720`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}, level {}, {}, ",
            self.profile(),
            self.level(),
            self.chroma()
        )?;
        if self.bit_depth_luma == self.bit_depth_chroma {
            write!(f, "{}-bit", self.bit_depth_luma)?;
        } else {
            write!(
                f,
                "{}-bit luma, {}-bit chroma",
                self.bit_depth_luma, self.bit_depth_chroma
            )?;
        }
        write!(f, ", {}x{}", self.width, self.height)?;
        if !self.frame_mbs_only {
            f.write_str(" interlaced")?;
        }
        Ok(())
    }
}

fn strip_start_code(nal: &[u8]) -> &[u8] {
    nal.strip_prefix(&[0, 0, 0, 1])
        .or_else(|| nal.strip_prefix(&[0, 0, 1]))
        .unwrap_or(nal)
}

/// The payload without its emulation prevention bytes: an encoder writes `00 00 03` where
/// the data holds `00 00` followed by a byte of 3 or less, so that no start code appears.
fn unescape(payload: &[u8]) -> Vec<u8> {
    let mut rbsp = Vec::with_capacity(payload.len());
    let mut zeros = 0;
    for &byte in payload {
        if zeros >= 2 && byte == 3 {
            zeros = 0;
            continue;
        }
        zeros = if byte == 0 { zeros + 1 } else { 0 };
        rbsp.push(byte);
    }
    rbsp
}

fn size(field: &'static str, coded: u64, cropped: u64) -> Result<u32, SpsError> {
    coded
        .checked_sub(cropped)
        .filter(|&pixels| pixels > 0)
        .and_then(|pixels| u32::try_from(pixels).ok())
        .ok_or(SpsError::OutOfRange {
            field,
            value: coded,
        })
}

/// Scaling lists only need reading past (7.3.2.1.1.1).
fn skip_scaling_list(r: &mut Bits<'_>, size: usize) -> Result<(), SpsError> {
    let (mut last, mut next) = (8i64, 8i64);
    for _ in 0..size {
        if next != 0 {
            let delta = i64::from(r.se("delta_scale")?);
            if !(-128..=127).contains(&delta) {
                return Err(SpsError::OutOfRange {
                    field: "delta_scale",
                    value: delta.unsigned_abs(),
                });
            }
            next = (last + delta).rem_euclid(256);
        }
        if next != 0 {
            last = next;
        }
    }
    Ok(())
}

/// The video usability information (Annex E.1.1), read past to reach the stop bit.
fn skip_vui(r: &mut Bits<'_>) -> Result<(), SpsError> {
    if r.flag("aspect_ratio_info_present_flag")? && r.byte("aspect_ratio_idc")? == 255 {
        r.bits(16, "sar_width")?;
        r.bits(16, "sar_height")?;
    }
    if r.flag("overscan_info_present_flag")? {
        r.flag("overscan_appropriate_flag")?;
    }
    if r.flag("video_signal_type_present_flag")? {
        r.bits(3, "video_format")?;
        r.flag("video_full_range_flag")?;
        if r.flag("colour_description_present_flag")? {
            r.byte("colour_primaries")?;
            r.byte("transfer_characteristics")?;
            r.byte("matrix_coefficients")?;
        }
    }
    if r.flag("chroma_loc_info_present_flag")? {
        r.ue_max("chroma_sample_loc_type_top_field", 5)?;
        r.ue_max("chroma_sample_loc_type_bottom_field", 5)?;
    }
    if r.flag("timing_info_present_flag")? {
        r.bits(32, "num_units_in_tick")?;
        r.bits(32, "time_scale")?;
        r.flag("fixed_frame_rate_flag")?;
    }
    let nal_hrd = r.flag("nal_hrd_parameters_present_flag")?;
    if nal_hrd {
        skip_hrd(r)?;
    }
    let vcl_hrd = r.flag("vcl_hrd_parameters_present_flag")?;
    if vcl_hrd {
        skip_hrd(r)?;
    }
    if nal_hrd || vcl_hrd {
        r.flag("low_delay_hrd_flag")?;
    }
    r.flag("pic_struct_present_flag")?;
    if r.flag("bitstream_restriction_flag")? {
        r.flag("motion_vectors_over_pic_boundaries_flag")?;
        for field in [
            "max_bytes_per_pic_denom",
            "max_bits_per_mb_denom",
            "log2_max_mv_length_horizontal",
            "log2_max_mv_length_vertical",
            "max_num_reorder_frames",
            "max_dec_frame_buffering",
        ] {
            r.ue(field)?;
        }
    }
    Ok(())
}

/// Hypothetical reference decoder parameters (Annex E.1.2).
fn skip_hrd(r: &mut Bits<'_>) -> Result<(), SpsError> {
    let cpb_count = r.ue_max("cpb_cnt_minus1", 31)? + 1;
    r.bits(4, "bit_rate_scale")?;
    r.bits(4, "cpb_size_scale")?;
    for _ in 0..cpb_count {
        r.ue("bit_rate_value_minus1")?;
        r.ue("cpb_size_value_minus1")?;
        r.flag("cbr_flag")?;
    }
    for field in [
        "initial_cpb_removal_delay_length_minus1",
        "cpb_removal_delay_length_minus1",
        "dpb_output_delay_length_minus1",
        "time_offset_length",
    ] {
        r.bits(5, field)?;
    }
    Ok(())
}

/// A big-endian bit reader over an RBSP; every read names the field it is for, so that a
/// truncated SPS says where it ends.
struct Bits<'a> {
    data: &'a [u8],
    /// The next bit, counted from the first byte's top bit.
    at: usize,
}

impl<'a> Bits<'a> {
    fn new(data: &'a [u8]) -> Bits<'a> {
        Bits { data, at: 0 }
    }

    fn flag(&mut self, field: &'static str) -> Result<bool, SpsError> {
        let byte = self
            .data
            .get(self.at / 8)
            .ok_or(SpsError::Truncated(field))?;
        let bit = byte >> (7 - self.at % 8) & 1;
        self.at += 1;
        Ok(bit == 1)
    }

    /// Up to 32 bits.
    fn bits(&mut self, count: u32, field: &'static str) -> Result<u32, SpsError> {
        let mut value = 0u32;
        for _ in 0..count {
            value = value << 1 | u32::from(self.flag(field)?);
        }
        Ok(value)
    }

    fn byte(&mut self, field: &'static str) -> Result<u8, SpsError> {
        let value = self.bits(8, field)?;
        Ok(u8::try_from(value).unwrap_or(u8::MAX))
    }

    /// An unsigned exp-Golomb code (9.1): n zeros, a one, then n bits.
    fn ue(&mut self, field: &'static str) -> Result<u32, SpsError> {
        let mut zeros = 0u32;
        while !self.flag(field)? {
            zeros += 1;
            if zeros > 31 {
                return Err(SpsError::CodeTooLong(field));
            }
        }
        let rest = u64::from(self.bits(zeros, field)?);
        let value = (1u64 << zeros) - 1 + rest;
        u32::try_from(value).map_err(|_| SpsError::OutOfRange { field, value })
    }

    fn ue_max(&mut self, field: &'static str, max: u8) -> Result<u8, SpsError> {
        let value = self.ue(field)?;
        u8::try_from(value)
            .ok()
            .filter(|&v| v <= max)
            .ok_or(SpsError::OutOfRange {
                field,
                value: u64::from(value),
            })
    }

    /// A signed exp-Golomb code (9.1.1): 1, -1, 2, -2, … for 1, 2, 3, 4, …
    fn se(&mut self, field: &'static str) -> Result<i32, SpsError> {
        let code = i64::from(self.ue(field)?);
        let value = if code % 2 == 1 {
            (code + 1) / 2
        } else {
            -(code / 2)
        };
        i32::try_from(value).map_err(|_| SpsError::OutOfRange {
            field,
            value: value.unsigned_abs(),
        })
    }

    /// `rbsp_stop_one_bit`: whatever follows it is alignment zeros.
    fn stop_bit(&mut self) -> Result<(), SpsError> {
        if self.flag("rbsp_stop_one_bit")? {
            Ok(())
        } else {
            Err(SpsError::NoStopBit)
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
