//go:build race

package graphql_test

// raceSlowdown scales CPU budgets: the race detector makes code several
// times slower.
const raceSlowdown = 10
