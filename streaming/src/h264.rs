//! Just enough of H.264's Annex-B byte stream to tell a keyframe and to find its parameter
//! sets; the codec itself is GStreamer's business.

/// NAL unit types (ITU-T H.264, table 7-1) that matter here.
pub const NAL_IDR: u8 = 5;
pub const NAL_SPS: u8 = 7;
pub const NAL_PPS: u8 = 8;

/// The NAL units of an Annex-B buffer, each with its start code.
pub fn nal_units(data: &[u8]) -> Vec<&[u8]> {
    let starts = start_codes(data);
    let mut units = Vec::with_capacity(starts.len());
    for (i, &(at, _)) in starts.iter().enumerate() {
        let end = starts.get(i + 1).map_or(data.len(), |&(next, _)| next);
        units.push(&data[at..end]);
    }
    units
}

/// The type of a NAL unit given with its start code.
pub fn nal_type(unit: &[u8]) -> Option<u8> {
    let header = if unit.starts_with(&[0, 0, 0, 1]) {
        unit.get(4)
    } else if unit.starts_with(&[0, 0, 1]) {
        unit.get(3)
    } else {
        None
    };
    header.map(|h| h & 0x1f)
}

/// Whether the buffer begins with an Annex-B start code.
pub fn is_annex_b(data: &[u8]) -> bool {
    data.starts_with(&[0, 0, 1]) || data.starts_with(&[0, 0, 0, 1])
}

/// Whether the access unit holds an IDR slice: a decoder may start there.
pub fn is_idr(data: &[u8]) -> bool {
    nal_units(data).iter().any(|u| nal_type(u) == Some(NAL_IDR))
}

/// The SPS and PPS units of `data`, in stream order, with their start codes; `None` unless
/// both are there.
pub fn parameter_sets(data: &[u8]) -> Option<Vec<u8>> {
    let mut sets = Vec::new();
    let (mut sps, mut pps) = (false, false);
    for unit in nal_units(data) {
        match nal_type(unit) {
            Some(NAL_SPS) => sps = true,
            Some(NAL_PPS) => pps = true,
            _ => continue,
        }
        sets.extend_from_slice(unit);
    }
    (sps && pps).then_some(sets)
}

/// The first SPS unit of `data`, with its start code: what [`crate::sps::Sps::parse`] reads.
pub fn sps(data: &[u8]) -> Option<&[u8]> {
    nal_units(data)
        .into_iter()
        .find(|u| nal_type(u) == Some(NAL_SPS))
}

/// Positions of every start code and its length (3 or 4 bytes).
fn start_codes(data: &[u8]) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    let mut i = 0;
    while i + 3 <= data.len() {
        if data[i] == 0 && data[i + 1] == 0 && data[i + 2] == 1 {
            // A zero before `00 00 01` belongs to a 4-byte start code.
            if i > 0 && data[i - 1] == 0 {
                found.push((i - 1, 4));
            } else {
                found.push((i, 3));
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPS: &[u8] = &[0, 0, 0, 1, 0x67, 0x42, 0xc0, 0x1f];
    const PPS: &[u8] = &[0, 0, 0, 1, 0x68, 0xce, 0x3c, 0x80];
    const IDR: &[u8] = &[0, 0, 1, 0x65, 0x88, 0x84, 0x00];
    const SLICE: &[u8] = &[0, 0, 0, 1, 0x41, 0x9a, 0x02];

    fn join(parts: &[&[u8]]) -> Vec<u8> {
        parts.concat()
    }

    #[test]
    fn splits_units_with_three_and_four_byte_start_codes() {
        let data = join(&[SPS, PPS, IDR]);
        let units = nal_units(&data);
        assert_eq!(units, vec![SPS, PPS, IDR]);
        let types: Vec<_> = units.iter().map(|u| nal_type(u)).collect();
        assert_eq!(types, vec![Some(7), Some(8), Some(5)]);
    }

    #[test]
    fn an_idr_is_a_keyframe_and_a_slice_is_not() {
        assert!(is_idr(&join(&[SPS, PPS, IDR])));
        assert!(!is_idr(SLICE));
        assert!(!is_idr(&[]));
    }

    #[test]
    fn parameter_sets_need_both_sps_and_pps() {
        assert_eq!(
            parameter_sets(&join(&[SPS, PPS, IDR])),
            Some(join(&[SPS, PPS]))
        );
        assert_eq!(parameter_sets(&join(&[SPS, IDR])), None);
        assert_eq!(parameter_sets(SLICE), None);
    }

    #[test]
    fn the_sps_is_found_among_the_units() {
        assert_eq!(sps(&join(&[PPS, SPS, IDR])), Some(SPS));
        assert_eq!(sps(&join(&[PPS, IDR])), None);
    }

    #[test]
    fn annex_b_needs_a_leading_start_code() {
        assert!(is_annex_b(IDR));
        assert!(is_annex_b(SLICE));
        assert!(!is_annex_b(&[0x65, 0, 0, 1]));
        assert!(!is_annex_b(&[]));
    }
}
