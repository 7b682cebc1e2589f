//! Text for people: messages end up in conditions and Events, which have size limits.

/// Cuts `text` to at most `max` bytes at a character boundary, marking the cut with `…`.
pub fn truncate(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max.saturating_sub('…'.len_utf8());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

#[cfg(test)]
mod tests {
    #[test]
    fn cuts_at_a_character_boundary_within_the_limit() {
        assert_eq!(super::truncate("short".into(), 10), "short");
        let cut = super::truncate("ééééé".into(), 8);
        assert!(cut.len() <= 8 && cut.ends_with('…'), "{cut}");
    }
}
