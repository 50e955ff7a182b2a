//! Plain column tables, laid out like `kubectl get`: upper-case headers,
//! columns three spaces apart, no borders.

/// A table being filled row by row.
pub struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers.
    pub fn new(headers: &[&str]) -> Self {
        Self {
            rows: vec![headers.iter().map(|h| (*h).to_owned()).collect()],
        }
    }

    /// Adds one row; missing cells print as `<none>` the way kubectl does.
    pub fn row(&mut self, cells: Vec<String>) {
        let cells = cells
            .into_iter()
            .map(|cell| {
                if cell.is_empty() {
                    "<none>".to_owned()
                } else {
                    cell
                }
            })
            .collect();
        self.rows.push(cells);
    }

    /// The table as text, one line per row, each ending in a newline.
    pub fn render(&self) -> String {
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> = (0..columns)
            .map(|c| {
                self.rows
                    .iter()
                    .filter_map(|row| row.get(c))
                    .map(|cell| cell.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut text = String::new();
        for row in &self.rows {
            let mut line = String::new();
            for (c, cell) in row.iter().enumerate() {
                line.push_str(cell);
                if c + 1 < row.len() {
                    let pad = widths[c] - cell.chars().count() + 3;
                    line.extend(std::iter::repeat_n(' ', pad));
                }
            }
            text.push_str(line.trim_end());
            text.push('\n');
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_three_spaces_apart_and_blanks_read_none() {
        let mut table = Table::new(&["NAME", "AGE"]);
        table.row(vec!["a-long-name".into(), "5s".into()]);
        table.row(vec!["b".into(), String::new()]);
        assert_eq!(
            table.render(),
            "NAME          AGE\na-long-name   5s\nb             <none>\n"
        );
    }
}
