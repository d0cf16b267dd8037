//! Fitting text into the room a panel has: wrapped at words, shortened at a word with
//! `…`, or the first of several forms that fits, so that nothing on screen is cut in the
//! middle of a word or a number.

/// Width of `text` in terminal columns (every character the console prints is one wide).
pub(crate) fn width(text: &str) -> usize {
    text.chars().count()
}

/// `text` in rows of at most `cols`, broken at spaces; a word longer than a row is split.
pub(crate) fn wrap(text: &str, cols: usize) -> Vec<String> {
    let cols = cols.max(1);
    let mut rows = Vec::new();
    let mut row = String::new();
    for word in text.split_whitespace() {
        let mut word = word;
        loop {
            let room = if row.is_empty() {
                cols
            } else {
                cols.saturating_sub(width(&row) + 1)
            };
            if width(word) <= room {
                if !row.is_empty() {
                    row.push(' ');
                }
                row.push_str(word);
                break;
            }
            if row.is_empty() {
                // Longer than a whole row: split it.
                let cut = word.char_indices().nth(cols).map_or(word.len(), |(i, _)| i);
                rows.push(word[..cut].to_owned());
                word = &word[cut..];
                if word.is_empty() {
                    break;
                }
            } else {
                rows.push(std::mem::take(&mut row));
            }
        }
    }
    if !row.is_empty() || rows.is_empty() {
        rows.push(row);
    }
    rows
}

/// `text` in at most `rows` rows of `cols`: wrapped, and the last row shortened at a word
/// with `…` when there is more than fits. The start of the text, where the console puts
/// what matters most, is always shown.
pub(crate) fn wrap_at_most(text: &str, cols: usize, rows: usize) -> Vec<String> {
    let mut wrapped = wrap(text, cols);
    if wrapped.len() <= rows || rows == 0 {
        return wrapped;
    }
    let rest = wrapped[rows - 1..].join(" ");
    wrapped.truncate(rows - 1);
    wrapped.push(shorten(&rest, cols));
    wrapped
}

/// `text` if it fits in `cols`, else cut at the last space that leaves room for `…`.
pub(crate) fn shorten(text: &str, cols: usize) -> String {
    if width(text) <= cols {
        return text.to_owned();
    }
    let room = cols.saturating_sub(1);
    let head: String = text.chars().take(room).collect();
    let head = match head.rfind(' ') {
        Some(space) if space > 0 => head[..space].trim_end(),
        _ => head.as_str(),
    };
    format!("{head}…")
}

/// The first of `forms` that fits in `cols` (the last, shortened, if none does).
pub(crate) fn first_fit<S: AsRef<str>>(forms: &[S], cols: usize) -> String {
    forms
        .iter()
        .map(AsRef::as_ref)
        .find(|f| width(f) <= cols)
        .map_or_else(
            || shorten(forms.last().map_or("", AsRef::as_ref), cols),
            str::to_owned,
        )
}

/// `label` and `value` on one row of `cols`, the value flush right. The value is never cut:
/// the label gives way first.
pub(crate) fn label_value(label: &str, value: &str, cols: usize) -> (String, String) {
    let room = cols.saturating_sub(width(value) + 1);
    let label: String = label.chars().take(room).collect();
    let pad = cols.saturating_sub(width(&label) + width(value));
    (label, format!("{}{value}", " ".repeat(pad)))
}

/// `parts` joined by ` · ` on one row when they fit in `cols`, else one part a row.
pub(crate) fn joined_or_stacked(parts: &[String], cols: usize) -> Vec<String> {
    let joined = parts.join(" · ");
    if width(&joined) <= cols {
        vec![joined]
    } else {
        parts.to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_at_words_and_splits_only_what_cannot_fit() {
        assert_eq!(
            wrap("REFUSED undo QH: the last card dealt is 7S", 20),
            vec!["REFUSED undo QH: the", "last card dealt is", "7S"]
        );
        assert_eq!(wrap("abcdefghij", 4), vec!["abcd", "efgh", "ij"]);
        assert_eq!(wrap("", 10), vec![""]);
    }

    #[test]
    fn shortens_at_a_word_keeping_the_start() {
        assert_eq!(
            shorten("REFUSED AS: no card is due", 80),
            "REFUSED AS: no card is due"
        );
        assert_eq!(shorten("REFUSED AS: no card is due", 16), "REFUSED AS: no…");
        assert_eq!(
            wrap_at_most("one two three four five six", 9, 2),
            vec!["one two", "three…"]
        );
    }

    #[test]
    fn a_value_is_never_cut_the_label_gives_way() {
        let (label, value) = label_value("Perfect pair", "€1,250.00 (4)", 20);
        assert_eq!(value.trim_start(), "€1,250.00 (4)");
        assert_eq!(width(&label) + width(&value), 20);
        let (label, value) = label_value("Tie", "€0.00", 12);
        assert_eq!(format!("{label}{value}"), "Tie    €0.00");
        assert_eq!(first_fit(&["players 120", "120"], 5), "120");
        assert_eq!(
            joined_or_stacked(&["371 left".into(), "cut card OUT".into()], 20),
            vec!["371 left", "cut card OUT"]
        );
    }
}
