#!/usr/bin/env python3
"""Stand-ins for a WeCom group robot and a DingTalk robot on 127.0.0.1, for the demo.

They check what the real platforms check (the WeCom key, the DingTalk signature) and
answer in the platforms' format ({"errcode": 0, "errmsg": "ok"}), then print each
message as a group member would see it. Standard library only.
"""
import base64
import hashlib
import hmac
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

WECOM_KEY = os.environ["WECOM_KEY"]
DINGTALK_SECRET = os.environ["DINGTALK_SECRET"]
START = time.time()


def answer(handler, code, message):
    body = json.dumps({"errcode": code, "errmsg": message}).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


class Robots(BaseHTTPRequestHandler):
    def do_POST(self):
        url = urlparse(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        at = f"[{time.time() - START:5.1f}s]"
        if url.path == "/cgi-bin/webhook/send":
            if query.get("key") != WECOM_KEY:
                return answer(self, 93000, "invalid webhook url")
            text = message["text"]
            mentions = " ".join("@" + m for m in text.get("mentioned_list", []))
            print(f"{at} WeCom    | {text['content']}  {mentions}", flush=True)
            return answer(self, 0, "ok")
        if url.path == "/robot/send":
            timestamp = query.get("timestamp", "")
            string_to_sign = f"{timestamp}\n{DINGTALK_SECRET}".encode()
            digest = hmac.new(DINGTALK_SECRET.encode(), string_to_sign, hashlib.sha256).digest()
            if not hmac.compare_digest(base64.b64encode(digest).decode(), query.get("sign", "")):
                return answer(self, 310000, "sign not match")
            print(f"{at} DingTalk | {message['text']['content']}", flush=True)
            return answer(self, 0, "ok")
        self.send_response(404)
        self.end_headers()

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8765
    ThreadingHTTPServer(("127.0.0.1", port), Robots).serve_forever()
