//! Ages as kubectl prints them (`45s`, `3m20s`, `5h`, `2d3h`), so a table
//! from this plugin reads like one from `kubectl get`.

use jiff::Timestamp;

/// How long ago `then` was, seen at `now`.
pub fn since(then: Timestamp, now: Timestamp) -> String {
    let seconds = now.as_second() - then.as_second();
    human(seconds)
}

/// kubectl's `HumanDuration`: coarser the older it gets.
pub fn human(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".to_owned();
    }
    let seconds = seconds.max(0);
    let minutes = seconds / 60;
    let hours = seconds / 3600;
    if seconds < 60 * 2 {
        format!("{seconds}s")
    } else if minutes < 10 {
        match seconds % 60 {
            0 => format!("{minutes}m"),
            s => format!("{minutes}m{s}s"),
        }
    } else if minutes < 60 * 3 {
        format!("{minutes}m")
    } else if hours < 8 {
        match minutes % 60 {
            0 => format!("{hours}h"),
            m => format!("{hours}h{m}m"),
        }
    } else if hours < 48 {
        format!("{hours}h")
    } else if hours < 24 * 8 {
        match hours % 24 {
            0 => format!("{}d", hours / 24),
            h => format!("{}d{h}h", hours / 24),
        }
    } else if hours < 24 * 365 * 2 {
        format!("{}d", hours / 24)
    } else if hours < 24 * 365 * 8 {
        match (hours / 24) % 365 {
            0 => format!("{}y", hours / 24 / 365),
            d => format!("{}y{d}d", hours / 24 / 365),
        }
    } else {
        format!("{}y", hours / 24 / 365)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_match_kubectl() {
        assert_eq!(human(0), "0s");
        assert_eq!(human(-1), "0s");
        assert_eq!(human(-5), "<invalid>");
        assert_eq!(human(119), "119s");
        assert_eq!(human(200), "3m20s");
        assert_eq!(human(300), "5m");
        assert_eq!(human(3600), "60m");
        assert_eq!(human(4 * 3600 + 60), "4h1m");
        assert_eq!(human(30 * 3600), "30h");
        assert_eq!(human(3 * 86400 + 3600), "3d1h");
        assert_eq!(human(100 * 86400), "100d");
        assert_eq!(human(3 * 365 * 86400 + 86400), "3y1d");
        assert_eq!(human(10 * 365 * 86400), "10y");
    }
}
