package punctual

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Signature errors of VerifySignature and VerifySignatureAny.
var (
	ErrSignatureMalformed = errors.New("punctual: Punctual-Signature header malformed")
	ErrSignatureMismatch  = errors.New("punctual: signature does not match")
	ErrSignatureExpired   = errors.New("punctual: signature timestamp outside the tolerance")
)

// DefaultTolerance is the replay window docs/webhooks.md suggests.
const DefaultTolerance = 5 * time.Minute

// VerifySignature checks a delivery's Punctual-Signature header
// ("t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">") against the raw body and
// the secret, in constant time, and refuses a timestamp more than tolerance away from
// now (zero tolerance: DefaultTolerance; a zero now: the current time). nil means valid.
// It is VerifySignatureAny with one secret.
func VerifySignature(body []byte, header, secret string, tolerance time.Duration, now time.Time) error {
	return VerifySignatureAny(body, header, []string{secret}, tolerance, now)
}

// VerifySignatureAny is VerifySignature with several secrets, as a receiver rotating
// its secret passes its current and previous one. The header may hold several v1 (a
// server rotating a queue's secret signs with both, the new one first) and other
// fields, which are ignored; it is valid when any v1 matches any secret, every pair
// compared in constant time. No secrets: ErrSignatureMismatch.
func VerifySignatureAny(body []byte, header string, secrets []string, tolerance time.Duration, now time.Time) error {
	if tolerance == 0 {
		tolerance = DefaultTolerance
	}
	if now.IsZero() {
		now = time.Now()
	}
	var ts string
	var sent [][]byte
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			// A v1 that is not hex matches nothing; the header is still read whole.
			if got, err := hex.DecodeString(v); err == nil {
				sent = append(sent, got)
			} else {
				sent = append(sent, nil)
			}
		}
	}
	if ts == "" || len(sent) == 0 {
		return ErrSignatureMalformed
	}
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ErrSignatureMalformed
	}
	matched := false
	for _, secret := range secrets {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(ts))
		mac.Write([]byte("."))
		mac.Write(body)
		expected := mac.Sum(nil)
		for _, got := range sent {
			if hmac.Equal(expected, got) {
				matched = true
			}
		}
	}
	if !matched {
		return ErrSignatureMismatch
	}
	skew := now.Sub(time.Unix(t, 0))
	if skew < 0 {
		skew = -skew
	}
	if skew > tolerance {
		return ErrSignatureExpired
	}
	return nil
}
