//! Unit tests of tiled indexing and error carets.

use super::*;

#[test]
fn seed_example() {
    assert_eq!(linear_index_with_tile(&[2, 3], &[3, 5], &[2, 2]), 17);
    assert_eq!(linear_index_with_tile(&[2], &[3, 5], &[2, 2]), u64::MAX);
    assert_eq!(linear_index_with_tile(&[2, 3], &[3, 5], &[0, 2]), u64::MAX);
}

#[test]
fn caret_points_at_problem() {
    let e = parse("f32[12a]").unwrap_err();
    assert_eq!(e.caret("f32[12a]"), "f32[12a]\n    ^^^");
}
