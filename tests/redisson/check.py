"""The checks of tests/redisson/run.sh that read JSON: the import's counts, and every task
against what WriteDelayedQueues offered (its expected.json), through the API.

    python3 check.py WORK_DIR COUNT IMPORT_STARTED_MS IMPORT_ENDED_MS

Prints one line per check and closes with "redisson: N passed, 0 failed"; exits 1 at the
first failure.
"""

import datetime
import json
import os
import sys
import urllib.parse
import urllib.request

work, count, started, ended = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
server = os.environ["PUNCTUAL_SERVER"]
passed = 0


def check(ok, what):
    global passed
    if not ok:
        print(f"redisson: FAILED: {what}", file=sys.stderr)
        print(f"redisson: {passed} passed, 1 failed")
        sys.exit(1)
    passed += 1
    print(f"ok: {what}")


def counts(name):
    with open(os.path.join(work, name)) as f:
        return json.load(f)


def tasks(queue):
    """Every task of the queue, by key, page by page."""
    found, cursor = {}, None
    while True:
        query = {"limit": "1000", **({"cursor": cursor} if cursor else {})}
        url = f"{server}/v1/queues/{urllib.parse.quote(queue, safe='')}/tasks?{urllib.parse.urlencode(query)}"
        with urllib.request.urlopen(url) as answer:
            page = json.load(answer)
        found.update({task["key"]: task for task in page["tasks"]})
        cursor = page.get("next_cursor")
        if not cursor:
            return found


def epoch_ms(text):
    return round(datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


texts_delayed = count + 1  # the overdue one too; the one due at once was moved by Redisson
for name, delayed, moved in [("dry-texts.json", texts_delayed, 1), ("dry-orders.json", count, 0)]:
    c = counts(name)
    check(c["dry_run"] and c["imported"] == delayed and c["removed"] == delayed and c["in_destination"] == moved,
          f"{name}: {delayed} would be imported and removed, {moved} left to Redisson ({c})")
for name, delayed in [("texts.json", texts_delayed), ("orders.json", count)]:
    c = counts(name)
    check(c["imported"] == delayed and c["removed"] == delayed and c["delayed_after"] == 0
          and c["taken_by_redisson"] == 0 and c["skipped_bad_value"] == 0,
          f"{name}: {delayed} imported and removed, none left delayed ({c})")

with open(os.path.join(work, "expected.json")) as f:
    expected = json.load(f)
by_queue = {"flow:reminder": tasks("flow.reminder"), "{shop}order-cancel": tasks("order.cancel")}
check(len(by_queue["flow:reminder"]) == texts_delayed and len(by_queue["{shop}order-cancel"]) == count,
      "one task per delayed element, no more")
# StringCodec's tasks are keyed redisson-<id>, unknown to the writer: found by payload.
text_tasks = {task["payload"]: task for task in by_queue["flow:reminder"].values()}
check(all(key.startswith("redisson-") and len(key) == len("redisson-") + 16 for key in by_queue["flow:reminder"]),
      "StringCodec's tasks are keyed redisson-<the 8-byte id in hex>")

wrong = []
for element in expected:
    if element["queue"] == "flow:reminder":
        task = text_tasks.get(element["payload"])
    else:
        task = by_queue[element["queue"]].get(element["key"])
    if task is None:
        wrong.append(f"no task for {element}")
        continue
    if task["payload"] != element["payload"]:
        wrong.append(f"payload {task['payload']} != {element['payload']}")
    # Due at the score; one already past is due when the import stored it.
    due, wanted = epoch_ms(task["due_at"]), element["due_at_ms"]
    low, high = (wanted - 1000, wanted + 1000) if wanted > ended else (started - 1000, ended + 1000)
    if not low <= due <= high:
        wrong.append(f"{task['key']} due {due}, expected within [{low}, {high}]")
check(not wrong, f"{len(expected)} elements: each task due at its element's time (±1 s) with its payload"
      + ("" if not wrong else f": {wrong[:5]}"))
check(any(e["due_at_ms"] < started for e in expected), "an overdue element was among them")
print(f"redisson: {passed} passed, 0 failed")
