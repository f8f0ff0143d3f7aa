"""cuport's own fuzz harness (issue 11): generators, mutators, the invariant checker, a reducer, the campaign."""
