package graphql

import (
	"context"
	"errors"

	gql "github.com/graphql-go/graphql"
)

// Estimate is the cost model's worst-case answer to query on catalog
// name, or the refusal of its checks or of validation (answered without
// running, and not counted).
func (h *Handler) Estimate(ctx context.Context, name, query string) (int64, error) {
	doc, err := check(query)
	if err != nil {
		return 0, err
	}
	b, err := h.schema(ctx, name)
	if err != nil {
		return 0, err
	}
	if v := gql.ValidateDocument(&b.schema, doc, nil); !v.IsValid {
		return 0, errors.New(v.Errors[0].Message)
	}
	return b.stats.estimate(doc), nil
}
