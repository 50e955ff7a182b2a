//! `pakket-package`: Glasskube packages on the shared runtime.

fn main() {}
