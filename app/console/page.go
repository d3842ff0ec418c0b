package console

// PageRequest asks a list for Limit rows after skipping Offset. Console
// lists ask for one row more than they show; Page trims it and reports
// whether another page follows.
type PageRequest struct {
	Limit  int
	Offset int
}

// Page trims rows to limit-1 and reports whether rows held more.
func Page[T any](rows []T, req PageRequest) ([]T, bool) {
	if req.Limit > 1 && len(rows) >= req.Limit {
		return rows[:req.Limit-1], true
	}
	return rows, false
}
