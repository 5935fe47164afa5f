//! Colours: per controller, per path, and for the n-th of other series (flows, links).

use plotters::style::RGBColor;

/// The tab10 palette: distinct at a glance, and legible on white.
pub const TAB10: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// The colour of the `n`-th series (repeating after ten).
pub fn nth(n: usize) -> RGBColor {
    TAB10[n % TAB10.len()]
}

/// The colour of path `path` (0, 1, 2, ...), in every plot that separates paths.
pub fn path_color(path: u64) -> RGBColor {
    nth(path as usize)
}

/// Controller colours beyond tab10's nine: tab20's light blue and light orange.
const MORE: [RGBColor; 2] = [RGBColor(174, 199, 232), RGBColor(255, 187, 120)];

/// Which controller takes which colour: the controllers of the first plots keep theirs, and
/// controllers added later take the next ones (a plot's colours do not change when one is added).
/// An assignment of colours, not a list of controllers: the names are `mpquic_cc::names`'s (a
/// test checks each is one), and a controller not here is drawn in [`OTHER`].
const COLOUR_ORDER: [&str; 11] =
    ["amp", "xmp", "dcm", "mptcp-d", "mmptcp", "lia", "dctcp", "reno", "cubic", "olia", "balia"];

/// The colour of a controller, given by name or spec (`"amp"`, `"amp:beta=4"`, `"MPTCP-D"`),
/// possibly after a group (`"mix/amp"`): the palette but its grey, then [`MORE`], in
/// `COLOUR_ORDER` (mpquic-cc's controllers and the stack's own Cubic); any other name (kernel
/// TCP, a registered controller, unknown) is [`OTHER`].
pub fn controller_color(controller: &str) -> RGBColor {
    let spec = controller.rsplit('/').next().unwrap_or_default();
    let name = spec.split(':').next().unwrap_or_default().trim();
    let Some(slot) = COLOUR_ORDER.iter().position(|k| k.eq_ignore_ascii_case(name)) else {
        return OTHER;
    };
    TAB10.into_iter().filter(|&c| c != OTHER).chain(MORE).nth(slot).unwrap_or(OTHER)
}

/// The colour of series that are none of ours (kernel TCP, unknown controllers): tab10's grey.
pub const OTHER: RGBColor = TAB10[7];

/// A colour as CSS, for HTML and for pages that draw with JavaScript.
pub fn css(c: RGBColor) -> String {
    format!("rgb({},{},{})", c.0, c.1, c.2)
}

#[cfg(test)]
mod tests {
    use mpquic_cc::ControllerKind;

    use super::*;

    #[test]
    fn every_controller_has_its_own_colour_whatever_its_spelling() {
        let mut seen: Vec<RGBColor> = vec![OTHER];
        for kind in ControllerKind::ALL {
            let c = controller_color(kind.name());
            assert!(!seen.contains(&c), "{} shares a colour", kind.name());
            seen.push(c);
            assert_eq!(controller_color(&kind.name().to_uppercase()), c);
            assert_eq!(controller_color(&format!("{}:beta=4", kind.name())), c);
            assert_eq!(controller_color(&format!("mix/{}", kind.name())), c);
        }
        assert!(!seen.contains(&controller_color("cubic")));
        assert_eq!(controller_color("tcp"), OTHER);
        // The colours of the first plots stay where they were.
        assert_eq!(controller_color("reno"), TAB10[8]);
        assert_eq!(controller_color("cubic"), TAB10[9]);
    }

    #[test]
    fn every_coloured_name_is_a_controller_the_parser_knows() {
        let names = mpquic_cc::names();
        for name in COLOUR_ORDER {
            assert!(names.contains(&name), "`{name}` has a colour but is no controller");
        }
    }

    #[test]
    fn paths_take_the_palette_in_order() {
        assert_eq!(path_color(0), TAB10[0]);
        assert_eq!(path_color(1), TAB10[1]);
        assert_eq!(path_color(10), path_color(0));
        assert_eq!(css(path_color(0)), "rgb(31,119,180)");
    }
}
