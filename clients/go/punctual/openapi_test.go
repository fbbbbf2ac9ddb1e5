package punctual_test

// The client against the server's OpenAPI document. Guards against a server that gains
// an operation this client neither offers nor says it leaves out: every operation of
// GET /openapi.json is either in offered, with the Client method that calls it, or in
// notOffered, with the reason.

import (
	"encoding/json"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/punctual-rs/punctual/clients/go/punctual"
)

// offered maps each operation ("METHOD /path", as the document spells the path) to the
// Client method that calls it.
var offered = map[string]string{
	"PUT /v1/queues/{queue}/tasks/{key}":         "Schedule",
	"POST /v1/queues/{queue}/tasks":              "ScheduleMany",
	"GET /v1/queues/{queue}/tasks/{key}":         "Get",
	"GET /v1/queues/{queue}/tasks/{key}/history": "History",
	"DELETE /v1/queues/{queue}/tasks/{key}":      "Cancel",
	"DELETE /v1/queues/{queue}/tags/{tag}":       "CancelTag",
	"GET /v1/queues/{queue}/tasks":               "List", // and Tasks, its iterator
	"DELETE /v1/queues/{queue}/tasks":            "Purge",
	"GET /v1/queues/{queue}/groups":              "Groups",
	"GET /v1/queues":                             "Queues",
	"GET /v1/queues/{queue}":                     "Queue",
	"POST /v1/queues/{queue}/pause":              "Pause",
	"POST /v1/queues/{queue}/resume":             "Resume",
	"GET /v1/queues/{queue}/dead":                "Dead", // and DeadTasks, its iterator
	"POST /v1/queues/{queue}/dead/{key}/retry":   "RetryDead",
	"POST /v1/queues/{queue}/dead/retry":         "RetryDeadMany",
	"DELETE /v1/queues/{queue}/dead/{key}":       "DeleteDead",
	"GET /v1/queues/{queue}/settings":            "GetSettings",
	"PUT /v1/queues/{queue}/settings":            "PutSettings",
	"PATCH /v1/queues/{queue}/settings":          "PatchSettings",
	"DELETE /v1/queues/{queue}/settings":         "DeleteSettings",
	"GET /v1/calendars":                          "Calendars",
	"GET /v1/calendars/{name}":                   "GetCalendar",
	"PUT /v1/calendars/{name}":                   "PutCalendar",
	"DELETE /v1/calendars/{name}":                "DeleteCalendar",
	"POST /v1/queues/{queue}/lease":              "Lease",
	"POST /v1/leases/{lease_id}/ack":             "Ack",
	"POST /v1/acks":                              "Acks",
	"POST /v1/leases/{lease_id}/extend":          "Extend",
	"GET /v1/audit":                              "Audit", // and AuditEntries, its iterator
}

// notOffered are the operations the client leaves out on purpose, with the reason.
var notOffered = map[string]string{
	"GET /":                           "the dashboard's page, for a browser",
	"GET /healthz":                    "a liveness probe, for the process supervisor",
	"GET /readyz":                     "a readiness probe, for the load balancer",
	"GET /metrics":                    "Prometheus text, for a scraper",
	"GET /openapi.json":               "the document itself, which this test reads",
	"GET /v1/access":                  "the dashboard's question (which controls to show); a call outside a token's grant answers ErrForbidden naming the permission",
	"GET /v1/queues/{queue}/activity": "the dashboard's charts, kept in one server's memory and lost on restart",
}

func TestEveryOpenAPIOperationOfferedOrListed(t *testing.T) {
	s := startServer(t, serverOpts{})
	resp, err := http.Get(s.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
		} `json:"paths"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /openapi.json: %d %v", resp.StatusCode, err)
	}
	methods := map[string]bool{"get": true, "put": true, "post": true, "delete": true, "patch": true, "head": true, "options": true, "trace": true}
	served := map[string]string{} // "METHOD /path" → operationId
	for path, item := range doc.Paths {
		for method, op := range item {
			if methods[method] {
				served[strings.ToUpper(method)+" "+path] = op.OperationID
			}
		}
	}
	if len(served) == 0 {
		t.Fatal("the document lists no operation")
	}

	var missing []string
	for op, id := range served {
		_, isOffered := offered[op]
		_, isLeftOut := notOffered[op]
		switch {
		case !isOffered && !isLeftOut:
			missing = append(missing, op+" ("+id+")")
		case isOffered && isLeftOut:
			t.Errorf("%s is both offered and listed as not offered", op)
		}
	}
	sort.Strings(missing)
	for _, op := range missing {
		t.Errorf("the server has %s: offer it (a Client method, in offered) or list it in notOffered with the reason", op)
	}

	client := reflect.TypeOf(&punctual.Client{})
	for _, table := range []map[string]string{offered, notOffered} {
		for op := range table {
			if _, ok := served[op]; !ok {
				t.Errorf("%s is in the table but not in the server's document", op)
			}
		}
	}
	for op, method := range offered {
		if _, ok := client.MethodByName(method); !ok {
			t.Errorf("%s: the table names Client.%s, which does not exist", op, method)
		}
	}
}
