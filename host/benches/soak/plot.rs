//! The soak's samples drawn as an SVG: one line per figure, each scaled to its own maximum (they are
//! of different units), over the minutes; what matters is whether a line climbs.

use crate::Sample;

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 320.0;
const MARGIN: f64 = 40.0;
const COLOURS: [&str; 4] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"];

pub fn svg(samples: &[Sample]) -> String {
    let mut out = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<line x1="{MARGIN}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="black"/>
<line x1="{MARGIN}" y1="{MARGIN}" x2="{MARGIN}" y2="{bottom}" stroke="black"/>
<text x="{right}" y="{label}" text-anchor="end">minutes</text>
<text x="{MARGIN}" y="{top}">each line scaled to its own maximum</text>
"#,
        bottom = HEIGHT - MARGIN,
        right = WIDTH - MARGIN,
        label = HEIGHT - 10.0,
        top = MARGIN - 10.0,
    );
    let last = samples.last().map_or(1, |s| s.minute.max(1)) as f64;
    let figures = samples.first().map(|s| s.figures().len()).unwrap_or(0);
    for figure in 0..figures {
        let values: Vec<(f64, f64)> = (samples.iter())
            .map(|s| (s.minute as f64, s.figures()[figure].1))
            .collect();
        let max = values.iter().map(|(_, v)| *v).fold(0.0, f64::max).max(1e-9);
        let points: Vec<String> = (values.iter())
            .map(|(minute, value)| {
                let x = MARGIN + minute / last * (WIDTH - 2.0 * MARGIN);
                let y = HEIGHT - MARGIN - value / max * (HEIGHT - 2.0 * MARGIN);
                format!("{x:.1},{y:.1}")
            })
            .collect();
        let (name, colour) = (
            samples[0].figures()[figure].0,
            COLOURS[figure % COLOURS.len()],
        );
        out.push_str(&format!(
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{}\"/>\n\
             <text x=\"{}\" y=\"{}\" fill=\"{colour}\">{name} (max {max:.0})</text>\n",
            points.join(" "),
            WIDTH - 220.0,
            MARGIN + 16.0 * figure as f64,
        ));
    }
    out.push_str("</svg>\n");
    out
}
