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

// Signature errors of VerifySignature.
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
func VerifySignature(body []byte, header, secret string, tolerance time.Duration, now time.Time) error {
	if tolerance == 0 {
		tolerance = DefaultTolerance
	}
	if now.IsZero() {
		now = time.Now()
	}
	var ts, sent string
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			sent = v
		}
	}
	if ts == "" || sent == "" {
		return ErrSignatureMalformed
	}
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ErrSignatureMalformed
	}
	got, err := hex.DecodeString(sent)
	if err != nil {
		return ErrSignatureMismatch
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts))
	mac.Write([]byte("."))
	mac.Write(body)
	if !hmac.Equal(mac.Sum(nil), got) {
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
