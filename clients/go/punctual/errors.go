package punctual

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Sentinel errors, one per API error code a caller acts on. A *Error matches the
// sentinel of its code under errors.Is.
var (
	ErrInvalidArgument = errors.New("punctual: invalid_argument")
	ErrUnauthorized    = errors.New("punctual: unauthorized")
	ErrForbidden       = errors.New("punctual: forbidden")
	ErrNotFound        = errors.New("punctual: not_found")
	ErrConflict        = errors.New("punctual: conflict")
	ErrUnavailable     = errors.New("punctual: unavailable")
)

var sentinels = map[string]error{
	"invalid_argument": ErrInvalidArgument,
	"unauthorized":     ErrUnauthorized,
	"forbidden":        ErrForbidden,
	"not_found":        ErrNotFound,
	"conflict":         ErrConflict,
	"unavailable":      ErrUnavailable,
}

// Error is an error answered by the server (or, with code "unavailable" and Status 0,
// a server that could not be reached after the client's retries).
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
	Status  int    `json:"-"`
	// Err is the underlying transport error, for an unreachable server.
	Err error `json:"-"`
}

func (e *Error) Error() string {
	s := fmt.Sprintf("punctual: %s: %s", e.Code, e.Message)
	if e.Field != "" {
		s += " (field " + e.Field + ")"
	}
	if e.Status != 0 {
		s += fmt.Sprintf(" [HTTP %d]", e.Status)
	}
	return s
}

// Is reports whether target is the sentinel of e's code.
func (e *Error) Is(target error) bool {
	s, ok := sentinels[e.Code]
	return ok && s == target
}

// Unwrap gives the transport error of an unreachable server.
func (e *Error) Unwrap() error { return e.Err }

var codeByStatus = map[int]string{
	400: "invalid_argument", 401: "unauthorized", 403: "forbidden", 404: "not_found",
	405: "method_not_allowed", 409: "conflict", 413: "payload_too_large",
	500: "internal", 503: "unavailable",
}

// DecodeError turns a non-2xx answer into an *Error. A body that is not the API's
// error shape still gives a code, from the status.
func DecodeError(status int, body []byte) *Error {
	var wrap struct {
		Error *Error `json:"error"`
	}
	e := &Error{}
	if json.Unmarshal(body, &wrap) == nil && wrap.Error != nil && wrap.Error.Code != "" {
		e = wrap.Error
	} else {
		e.Message = string(body)
	}
	if e.Code == "" {
		e.Code = codeByStatus[status]
		if e.Code == "" {
			e.Code = "internal"
		}
	}
	e.Status = status
	return e
}
