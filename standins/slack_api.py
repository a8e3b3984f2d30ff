"""A local Slack Web API: point `WebClient(base_url=fake.base_url)` at it and assert on `fake.calls`.

    slack = FakeSlackApi().start()
    WebClient(token="xoxb-test", base_url=slack.base_url).chat_postMessage(channel="C1", text="hi")
    slack.calls_to("chat.postMessage")[0].args     # {"channel": "C1", "text": "hi"}
    slack.rate_limit("chat.postMessage", times=2, retry_after=0)   # faults for the next N calls
    slack.slow("chat.postMessage", 12.0)            # carried out at once, answered 12 s later
    slack.clear_faults("chat.postMessage")          # end the queued faults (a fault "for a while")
    slack.response_url("abc")                       # a response_url; posts land in calls as "response:abc"

Methods: auth.test, chat.postMessage, chat.update, chat.delete, chat.postEphemeral, views.open, views.update,
conversations.members, conversations.history, conversations.replies, conversations.list, usergroups.users.list.
Like Slack, message calls answer `invalid_blocks` for more than 50 blocks or a header text over 150 characters.
Token "xoxb-invalid" answers `invalid_auth`.

Conversations: like Slack, every conversation has an id ("C0000…"); chat.postMessage accepts the id or a
"#name" and answers with the id, and conversations.history takes only the id. Unlike Slack, a conversation
springs into existence (public, the bot a member) the first time a name or an id is used; `posted()` reports
each message's conversation the way it was first named.

Message metadata (chat.postMessage / chat.update `metadata`: {"event_type": str, "event_payload": object}) is
kept with the message; chat.update without `metadata` keeps it, with `{}` removes it. conversations.history
returns it only with `include_all_metadata`, newest message first, top-level messages only (not thread
replies), `oldest`/`latest`/`inclusive`/`limit` (default 100, at most 999) and cursor pagination
(`response_metadata.next_cursor`, `has_more`), as Slack's reference describes. Message timestamps have
Slack's format and increase, but their seconds are a fixed 1700000000, not the wall clock.

Threads, in Slack's wire format: chat.postMessage with `thread_ts` (the parent's ts) posts a reply, which carries
`thread_ts` and `parent_user_id`; a parent with replies carries `thread_ts` (its own ts), `reply_count`,
`reply_users`, `reply_users_count` and `latest_reply` wherever it is returned. conversations.replies (channel id
and the ts of the parent or of any message in the thread) returns the parent, then its replies oldest first, with
`oldest`/`latest`/`inclusive`/`limit` (default 1000) and cursor pagination, metadata only with
`include_all_metadata`; an unknown ts answers `thread_not_found`. Deleting a parent that still has replies leaves
Slack's tombstone in its place (`subtype` "tombstone", "This message was deleted."). Unlike Slack, a `thread_ts`
the stand-in has never seen is taken as is: people's own messages (an @mention to reply to) are not in it.
`replies(channel, ts)` gives a thread's replies as they are now.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from standins.http_server import LocalHttpServer, RecordedRequest, Reply

BOT_USER_ID = "U0BOT0001"
BOT_ID = "B0BOT0001"
APP_ID = "A0APP0001"
TEAM_ID = "T0TEAM001"
MAX_BLOCKS = 50
MAX_HEADER_TEXT = 150
MAX_HISTORY_LIMIT = 999
_CONVERSATION_ID = re.compile(r"[CGD][A-Z0-9]{2,}")
_USER_ID = re.compile(r"[UW][A-Z0-9]{2,}")


@dataclass(frozen=True)
class SlackCall:
    method: str  # "chat.postMessage", or "response:<id>" for a response_url post
    args: dict[str, Any]  # JSON body, or form fields (with JSON-valued fields such as blocks decoded)
    token: str | None
    request: RecordedRequest


@dataclass
class _Fault:
    times: int
    status: int = 200
    error: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class _Slow:
    seconds: float
    times: int | None  # None: every call


@dataclass
class _Conversation:
    id: str
    name: str
    label: str  # how it was first named ("#ml-alerts" or "C0ALERTS"): what posted() reports
    created: int


class FakeSlackApi:
    """Slack Web API on loopback; records every call and can fail the next calls of a method."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: list[SlackCall] = []
        self._faults: dict[str, list[_Fault]] = {}
        self._slow: dict[str, _Slow] = {}
        self._messages: dict[tuple[str, str], dict] = {}  # (conversation id, ts) -> message
        self._conversations: dict[str, _Conversation] = {}  # id -> conversation
        self._names: dict[str, str] = {}  # name (without "#") -> id
        self._conversation_ids = itertools.count(1)
        self._members: dict[str, list[str]] = {}  # conversation id -> user ids
        self._groups: dict[str, list[str]] = {}
        self._users: dict[str, str] = {}  # email -> user id
        self._ts = itertools.count(100)
        self._after: dict[str, Callable[[], None]] = {}
        self._view_ids = itertools.count(1)
        self.server = LocalHttpServer(self._handle)

    # ------------------------------------------------------------------------------------ lifecycle

    def start(self) -> FakeSlackApi:
        self.server.start()
        return self

    def stop(self) -> None:
        self.server.stop()

    def __enter__(self) -> FakeSlackApi:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """The WebClient base_url: http://127.0.0.1:PORT/api/"""
        return f"{self.server.base_url}/api/"

    def response_url(self, response_id: str) -> str:
        return f"{self.server.base_url}/response/{response_id}"

    # ------------------------------------------------------------------------------------ seeding & faults

    def seed_members(self, channel: str, user_ids: list[str]) -> None:
        with self._lock:
            self._members[self._resolve(channel).id] = list(user_ids)

    def conversation_id(self, channel: str) -> str:
        """The id of `channel` (a "#name" or an id), creating the conversation if it is new."""
        with self._lock:
            return self._resolve(channel).id

    def seed_user(self, email: str, user_id: str) -> None:
        """A workspace member users.lookupByEmail finds; a post to `user_id` lands in the app's DM with them."""
        with self._lock:
            self._users[email.lower()] = user_id

    def seed_usergroup(self, usergroup_id: str, user_ids: list[str]) -> None:
        with self._lock:
            self._groups[usergroup_id] = list(user_ids)

    def after_call(self, method: str, action: Callable[[], None]) -> None:
        """Run `action` once, in the server, after the next successful call of `method` (to stage a fault
        elsewhere at exactly that moment; a fault or a delay it stages applies to the calls after that one)."""
        with self._lock:
            self._after[method] = action

    def rate_limit(self, method: str, *, times: int = 1, retry_after: int = 1) -> None:
        """The next `times` calls of `method` answer HTTP 429 with Retry-After."""
        self._add_fault(method, _Fault(times, 429, "ratelimited", {"Retry-After": str(retry_after)}))

    def server_error(self, method: str, *, times: int = 1, status: int = 500) -> None:
        """The next `times` calls of `method` answer an HTTP 5xx."""
        self._add_fault(method, _Fault(times, status))

    def api_error(self, method: str, error: str, *, times: int = 1) -> None:
        """The next `times` calls of `method` answer HTTP 200 {"ok": false, "error": error}."""
        self._add_fault(method, _Fault(times, 200, error))

    def clear_faults(self, method: str | None = None) -> None:
        """Drop the faults still queued for `method` (every method when None): a fault "for a while" ends."""
        with self._lock:
            if method is None:
                self._faults.clear()
            else:
                self._faults.pop(method, None)

    def slow(self, method: str, seconds: float, *, times: int | None = None) -> None:
        """Calls of `method` are carried out at once but answered `seconds` later (the next `times` calls, or
        all until `slow(method, 0)`): Slack acting on a request whose answer the client gives up waiting for."""
        with self._lock:
            if seconds <= 0:
                self._slow.pop(method, None)
            else:
                self._slow[method] = _Slow(seconds, times)

    def _take_slow(self, method: str) -> float:
        with self._lock:
            slow = self._slow.get(method)
            if slow is None:
                return 0.0
            if slow.times is not None:
                slow.times -= 1
                if slow.times <= 0:
                    del self._slow[method]
            return slow.seconds

    def _add_fault(self, method: str, fault: _Fault) -> None:
        with self._lock:
            self._faults.setdefault(method, []).append(fault)

    def _take_fault(self, method: str) -> _Fault | None:
        with self._lock:
            queue = self._faults.get(method) or []
            if not queue:
                return None
            fault = queue[0]
            fault.times -= 1
            if fault.times <= 0:
                queue.pop(0)
            return fault

    # ------------------------------------------------------------------------------------ records

    @property
    def calls(self) -> list[SlackCall]:
        with self._lock:
            return list(self._calls)

    def calls_to(self, method: str) -> list[SlackCall]:
        return [call for call in self.calls if call.method == method]

    def clear(self) -> None:
        with self._lock:
            self._calls.clear()

    def posted(self) -> list[dict]:
        """Messages that were really posted (not thread replies), oldest first, with their channel (as it was
        first named) and current state (after any chat.update)."""
        with self._lock:
            items = [
                (ts, self._conversations[channel].label, m)
                for (channel, ts), m in self._messages.items()
                if not m.get("thread_ts")
            ]
        return [{**message, "channel": channel} for ts, channel, message in sorted(items, key=lambda i: float(i[0]))]

    def message(self, channel: str, ts: str) -> dict | None:
        """The current state of a posted (and possibly updated) message; `channel` is an id or a "#name"."""
        with self._lock:
            conversation = self._find(channel)
            return self._messages.get((conversation.id, ts)) if conversation is not None else None

    def replies(self, channel: str, ts: str) -> list[dict]:
        """The replies in the thread of the message `ts` (oldest first, current state); `channel` is an id or a
        "#name". Empty when the message has none (or does not exist)."""
        with self._lock:
            conversation = self._find(channel)
            if conversation is None:
                return []
            return [dict(m) for m in self._thread(conversation.id, ts)[1:]]

    # ------------------------------------------------------------------------------------ conversations

    def _resolve(self, channel: str) -> _Conversation:
        """The conversation `channel` names, created if new (call with the lock held)."""
        found = self._find(channel)
        if found is not None:
            return found
        if _USER_ID.fullmatch(channel):  # chat.postMessage to a user: the app's DM with them
            dm = "D" + channel[1:]
            conversation = self._conversations.get(dm) or _Conversation(dm, dm.lower(), dm, int(time.time()))
        elif _CONVERSATION_ID.fullmatch(channel):
            conversation = _Conversation(channel, channel.lower(), channel, int(time.time()))
        else:
            name = channel.removeprefix("#")
            conversation = _Conversation(f"C{next(self._conversation_ids):08d}", name, channel, int(time.time()))
        self._conversations[conversation.id] = conversation
        self._names[conversation.name] = conversation.id
        return conversation

    def _find(self, channel: str) -> _Conversation | None:
        """The conversation an id or a ("#")name names, if it exists (call with the lock held)."""
        if channel in self._conversations:
            return self._conversations[channel]
        known = self._names.get(channel.removeprefix("#"))
        return self._conversations.get(known) if known is not None else None

    # ------------------------------------------------------------------------------------ serving

    def _handle(self, request: RecordedRequest) -> Reply:
        path = request.path
        if path.startswith("/response/"):
            method = "response:" + path.removeprefix("/response/")
        elif path.startswith("/api/"):
            method = path.removeprefix("/api/")
        else:
            return Reply.text("not found", 404)
        call = SlackCall(method=method, args=_args(request), token=_token(request), request=request)
        with self._lock:
            self._calls.append(call)
        fault = self._take_fault(method)
        if fault is not None:
            if fault.status != 200:
                body = {"ok": False, "error": fault.error} if fault.error else {"ok": False}
                return Reply.json(body, fault.status, fault.headers)
            return _error(fault.error or "fatal_error")
        if method.startswith("response:"):
            return Reply.json({"ok": True})
        if call.token is None:
            return _error("not_authed")
        if call.token == "xoxb-invalid":
            return _error("invalid_auth")
        handler = self._methods().get(method)
        reply = handler(call.args) if handler else _error("unknown_method")
        reply.delay = self._take_slow(method)  # before the staged action: what it stages is for the next calls
        with self._lock:
            action = self._after.pop(method, None)
        if action is not None:
            action()
        return reply

    def _methods(self) -> dict[str, Callable[[dict[str, Any]], Reply]]:
        return {
            "auth.test": self._auth_test,
            "chat.postMessage": self._post_message,
            "chat.update": self._update,
            "chat.delete": self._delete,
            "chat.postEphemeral": self._post_ephemeral,
            "views.open": self._views_open,
            "views.update": self._views_update,
            "conversations.members": self._conversation_members,
            "conversations.history": self._conversation_history,
            "conversations.replies": self._conversation_replies,
            "conversations.list": self._conversation_list,
            "users.lookupByEmail": self._lookup_by_email,
            "usergroups.users.list": self._usergroup_users,
        }

    def _next_ts(self) -> str:
        """Slack's ts format ("seconds.micros", increasing); the seconds are fixed, not the time of the post."""
        return f"1700000000.{next(self._ts):06d}"

    def _auth_test(self, args: dict[str, Any]) -> Reply:
        return _ok(
            url="https://fake-workspace.slack.com/",
            team="Fake Workspace",
            user="trainmedic",
            team_id=TEAM_ID,
            user_id=BOT_USER_ID,
            bot_id=BOT_ID,
            is_enterprise_install=False,
        )

    def _post_message(self, args: dict[str, Any]) -> Reply:
        problem = _message_problem(args) or _metadata_problem(args)
        if problem:
            return _error(problem)
        ts = self._next_ts()
        message = _message(args, ts)
        if args.get("metadata"):
            message["metadata"] = _metadata(args["metadata"])
        with self._lock:
            channel = self._resolve(str(args["channel"])).id
            if args.get("thread_ts"):
                parent = self._messages.get((channel, str(args["thread_ts"])))
                message["thread_ts"] = str(args["thread_ts"])
                if parent is not None:
                    message["parent_user_id"] = parent.get("user", BOT_USER_ID)
            self._messages[(channel, ts)] = message
            shown = self._shown(channel, message)
        return _ok(channel=channel, ts=ts, message=shown)

    def _update(self, args: dict[str, Any]) -> Reply:
        if not args.get("ts"):
            return _error("message_not_found")
        problem = _message_problem(args) or _metadata_problem(args)
        if problem:
            return _error(problem)
        ts = str(args["ts"])
        with self._lock:
            conversation = self._find(str(args["channel"]))
            if conversation is None or (conversation.id, ts) not in self._messages:
                return _error("message_not_found")
            channel = conversation.id
            previous = self._messages[(channel, ts)]
            message = _message(args, ts)
            # Slack keeps a reply in its thread, and the metadata unless the update sends some.
            for kept in ("thread_ts", "parent_user_id", "metadata"):
                if kept in previous:
                    message[kept] = previous[kept]
            if "metadata" in args:
                message.pop("metadata", None)
                if args["metadata"]:
                    message["metadata"] = _metadata(args["metadata"])
            self._messages[(channel, ts)] = message
            shown = self._shown(channel, message)
        return _ok(channel=channel, ts=ts, text=message["text"], message=shown)

    def _delete(self, args: dict[str, Any]) -> Reply:
        ts = str(args.get("ts", ""))
        with self._lock:
            conversation = self._find(str(args.get("channel", "")))
            channel = conversation.id if conversation is not None else str(args.get("channel", ""))
            message = self._messages.get((channel, ts))
            if message is None or message.get("subtype") == "tombstone":
                return _error("message_not_found")
            if message.get("thread_ts") in (None, ts) and len(self._thread(channel, ts)) > 1:
                # A parent whose thread still has replies: Slack leaves a tombstone so the replies stay readable.
                self._messages[(channel, ts)] = _tombstone(ts)
            else:
                del self._messages[(channel, ts)]
        return _ok(channel=channel, ts=ts)

    def _post_ephemeral(self, args: dict[str, Any]) -> Reply:
        if not args.get("user"):
            return _error("user_not_in_channel")
        problem = _message_problem(args)
        return _error(problem) if problem else _ok(message_ts=self._next_ts())

    def _views_open(self, args: dict[str, Any]) -> Reply:
        if not args.get("trigger_id"):
            return _error("invalid_trigger_id")
        return self._view(args)

    def _views_update(self, args: dict[str, Any]) -> Reply:
        if not (args.get("view_id") or args.get("external_id")):
            return _error("not_found")
        return self._view(args, view_id=args.get("view_id"))

    def _view(self, args: dict[str, Any], view_id: str | None = None) -> Reply:
        view = args.get("view")
        if not isinstance(view, dict):
            return _error("invalid_arguments")
        if len(view.get("blocks", [])) > 100:
            return _error("invalid_blocks")
        return _ok(view={**view, "id": view_id or f"V{next(self._view_ids):08d}", "team_id": TEAM_ID})

    def _conversation_members(self, args: dict[str, Any]) -> Reply:
        with self._lock:
            conversation = self._find(str(args.get("channel")))
            members = self._members.get(conversation.id) if conversation is not None else None
        if members is None:
            return _error("channel_not_found")
        return _ok(members=members, response_metadata={"next_cursor": ""})

    def _conversation_history(self, args: dict[str, Any]) -> Reply:
        """conversations.history: the channel argument must be an id (Slack does not look names up here)."""
        channel = str(args.get("channel") or "")
        try:
            limit = int(args.get("limit") or 100)
            oldest = float(args.get("oldest") or 0)
        except ValueError:
            return _error("invalid_arguments")
        try:
            latest = float(args.get("latest") or time.time() + 1)
        except ValueError:
            return _error("invalid_ts_latest")
        limit = max(1, min(limit, MAX_HISTORY_LIMIT))
        inclusive = _truthy(args.get("inclusive"))
        with_metadata = _truthy(args.get("include_all_metadata"))
        cursor = args.get("cursor") or None
        before: float | None = None
        if cursor:
            before = _cursor_ts(str(cursor))
            if before is None:
                return _error("invalid_cursor")
        with self._lock:
            if channel not in self._conversations:
                return _error("channel_not_found")
            top_level = [
                self._shown(channel, message)
                for (conversation, ts), message in self._messages.items()
                if conversation == channel and message.get("thread_ts") in (None, ts)
            ]
        chosen = []
        for message in sorted(top_level, key=lambda m: float(m["ts"]), reverse=True):  # newest first
            ts = float(message["ts"])
            after_oldest = ts >= oldest if inclusive else ts > oldest
            before_latest = ts <= latest if inclusive else ts < latest
            if after_oldest and before_latest and (before is None or ts < before):
                if not with_metadata:
                    message.pop("metadata", None)
                chosen.append(message)
        page, more = chosen[:limit], len(chosen) > limit
        next_cursor = _cursor(page[-1]["ts"]) if more else ""
        return _ok(
            messages=page,
            has_more=more,
            pin_count=0,
            channel_actions_ts=None,
            channel_actions_count=0,
            response_metadata={"next_cursor": next_cursor},
        )

    def _conversation_replies(self, args: dict[str, Any]) -> Reply:
        """conversations.replies: a thread (its parent, then the replies oldest first); `ts` may name the parent or
        any reply. The channel argument must be an id, as for conversations.history."""
        channel = str(args.get("channel") or "")
        ts = str(args.get("ts") or "")
        try:
            limit = max(1, min(int(args.get("limit") or 1000), 1000))
            oldest = float(args.get("oldest") or 0)
            latest = float(args.get("latest") or time.time() + 1)
        except ValueError:
            return _error("invalid_arguments")
        inclusive = _truthy(args.get("inclusive"))
        with_metadata = _truthy(args.get("include_all_metadata"))
        after: float | None = None
        if args.get("cursor"):
            after = _cursor_ts(str(args["cursor"]))
            if after is None:
                return _error("invalid_cursor")
        with self._lock:
            if channel not in self._conversations:
                return _error("channel_not_found")
            message = self._messages.get((channel, ts))
            if not ts or message is None:
                return _error("thread_not_found")
            root = str(message.get("thread_ts") or ts)
            thread = [self._shown(channel, m) for m in self._thread(channel, root)] or [self._shown(channel, message)]
        chosen = []
        for item in thread:
            stamp = float(item["ts"])
            after_oldest = stamp >= oldest if inclusive else stamp > oldest
            before_latest = stamp <= latest if inclusive else stamp < latest
            if after_oldest and before_latest and (after is None or stamp > after):
                if not with_metadata:
                    item.pop("metadata", None)
                chosen.append(item)
        page, more = chosen[:limit], len(chosen) > limit
        return _ok(
            messages=page,
            has_more=more,
            response_metadata={"next_cursor": _cursor(page[-1]["ts"]) if more else ""},
        )

    def _thread(self, channel: str, root: str) -> list[dict]:
        """The parent `root` (when it exists) and its replies, oldest first (call with the lock held)."""
        replies = [
            m for (c, ts), m in self._messages.items() if c == channel and m.get("thread_ts") == root and ts != root
        ]
        parent = self._messages.get((channel, root))
        ordered = sorted(replies, key=lambda m: float(m["ts"]))
        return ([parent] if parent is not None else []) + ordered

    def _shown(self, channel: str, message: dict) -> dict:
        """A copy of `message` as Slack returns it: a parent with replies gets its thread summary (call with the
        lock held)."""
        shown = dict(message)
        ts = str(message["ts"])
        if message.get("thread_ts") not in (None, ts):
            return shown  # a reply
        replies = self._thread(channel, ts)[1:]
        if replies:
            users = list(dict.fromkeys(str(r.get("user", "")) for r in replies))
            shown.update(
                thread_ts=ts,
                reply_count=len(replies),
                reply_users=users,
                reply_users_count=len(users),
                latest_reply=replies[-1]["ts"],
                is_locked=False,
                subscribed=False,
            )
        return shown

    def _conversation_list(self, args: dict[str, Any]) -> Reply:
        types = {t.strip() for t in str(args.get("types") or "public_channel").split(",") if t.strip()}
        try:
            limit = max(1, min(int(args.get("limit") or 100), 1000))
            start = int(base64.b64decode(str(args.get("cursor") or "")).decode().removeprefix("offset:") or 0)
        except (ValueError, binascii.Error):
            return _error("invalid_cursor")
        with self._lock:
            listed = sorted(self._conversations.values(), key=lambda c: c.name)
            members = {c.id: len(self._members.get(c.id, [])) for c in listed}
        if "public_channel" not in types:  # every conversation here is a public channel
            listed = []
        page = listed[start : start + limit]
        more = start + limit < len(listed)
        next_cursor = base64.b64encode(f"offset:{start + limit}".encode()).decode() if more else ""
        channels = [
            {
                "id": c.id,
                "name": c.name,
                "name_normalized": c.name,
                "is_channel": True,
                "is_group": False,
                "is_im": False,
                "is_mpim": False,
                "is_private": False,
                "is_archived": False,
                "is_general": False,
                "is_member": True,
                "created": c.created,
                "creator": BOT_USER_ID,
                "num_members": members[c.id],
            }
            for c in page
        ]
        return _ok(channels=channels, response_metadata={"next_cursor": next_cursor})

    def _lookup_by_email(self, args: dict[str, Any]) -> Reply:
        with self._lock:
            user_id = self._users.get(str(args.get("email", "")).lower())
        return _error("users_not_found") if user_id is None else _ok(user={"id": user_id, "deleted": False})

    def _usergroup_users(self, args: dict[str, Any]) -> Reply:
        with self._lock:
            users = self._groups.get(str(args.get("usergroup")))
        return _error("no_such_subteam") if users is None else _ok(users=users)


def _ok(**fields: Any) -> Reply:
    return Reply.json({"ok": True, **fields})


def _error(error: str) -> Reply:
    return Reply.json({"ok": False, "error": error})


def _token(request: RecordedRequest) -> str | None:
    auth = request.header("authorization") or ""
    if auth.lower().startswith("bearer "):
        return auth[7:].strip() or None
    form_token = (request.form or {}).get("token")
    return form_token[0] if form_token else None


def _args(request: RecordedRequest) -> dict[str, Any]:
    if isinstance(request.json, dict):
        return dict(request.json)
    args: dict[str, Any] = {key: values[-1] for key, values in (request.form or {}).items()}
    args.update({key: values[-1] for key, values in request.query.items() if key not in args})
    for key in ("blocks", "attachments", "view", "metadata"):  # form clients send these as JSON strings
        if isinstance(args.get(key), str):
            try:
                args[key] = json.loads(args[key])
            except ValueError:
                pass
    return args


def _message_problem(args: dict[str, Any]) -> str | None:
    if not args.get("channel"):
        return "channel_not_found"
    blocks = args.get("blocks")
    if not args.get("text") and not blocks:
        return "no_text"
    if blocks is None:
        return None
    if not isinstance(blocks, list) or len(blocks) > MAX_BLOCKS:
        return "invalid_blocks"
    for block in blocks:
        if not isinstance(block, dict) or "type" not in block:
            return "invalid_blocks"
        if block["type"] == "header" and len(str((block.get("text") or {}).get("text", ""))) > MAX_HEADER_TEXT:
            return "invalid_blocks"
    return None


def _message(args: dict[str, Any], ts: str) -> dict:
    message = {
        "type": "message",
        "user": BOT_USER_ID,
        "bot_id": BOT_ID,
        "app_id": APP_ID,
        "team": TEAM_ID,
        "ts": ts,
        "text": args.get("text", ""),
    }
    if args.get("blocks") is not None:
        message["blocks"] = args["blocks"]
    return message


def _tombstone(ts: str) -> dict:
    """What Slack keeps of a deleted parent whose thread has replies."""
    return {
        "type": "message",
        "subtype": "tombstone",
        "user": "USLACKBOT",
        "hidden": True,
        "ts": ts,
        "thread_ts": ts,
        "text": "This message was deleted.",
    }


def _metadata_problem(args: dict[str, Any]) -> str | None:
    """Slack's answer to a malformed `metadata` argument ({} is allowed: chat.update removes metadata)."""
    if "metadata" not in args or args["metadata"] in ({}, None, ""):
        return None
    metadata = args["metadata"]
    if not isinstance(metadata, dict):
        return "invalid_metadata_format"
    if not isinstance(metadata.get("event_type"), str) or not metadata["event_type"]:
        return "invalid_metadata_schema"
    if not isinstance(metadata.get("event_payload"), dict):
        return "invalid_metadata_schema"
    return None


def _metadata(metadata: dict) -> dict:
    return {"event_type": metadata["event_type"], "event_payload": metadata["event_payload"]}


def _truthy(value: Any) -> bool:
    return value is True or str(value).lower() in ("1", "true")


def _cursor(ts: str) -> str:
    """Slack's history cursors are base64 of "next_ts:<ts>"."""
    return base64.b64encode(f"next_ts:{ts}".encode()).decode()


def _cursor_ts(cursor: str) -> float | None:
    try:
        text = base64.b64decode(cursor, validate=True).decode()
        return float(text.removeprefix("next_ts:")) if text.startswith("next_ts:") else None
    except (ValueError, binascii.Error):
        return None


# ---------------------------------------------------------------------------------------- requests Slack sends
# Bodies and signed headers of what Slack sends to an app's request URL (slash commands, interactivity, events),
# for tests and for trying the chat actions by hand (docs/chat-actions.md).


def signature_headers(
    secret: str, body: bytes, *, content_type: str, timestamp: int | None = None, retry_num: int | None = None
) -> dict[str, str]:
    """X-Slack-Signature / X-Slack-Request-Timestamp for `body` (v0 HMAC-SHA256), plus a retry header if given."""
    import hashlib
    import hmac
    import time

    stamp = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), b"v0:" + stamp.encode() + b":" + body, hashlib.sha256).hexdigest()
    headers = {"Content-Type": content_type, "X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": f"v0={digest}"}
    if retry_num is not None:
        headers["X-Slack-Retry-Num"] = str(retry_num)
        headers["X-Slack-Retry-Reason"] = "http_timeout"
    return headers


def slash_command_body(
    text: str, *, user: str, channel: str, response_url: str, trigger_id: str, command: str = "/diagnose"
) -> bytes:
    """A slash command invocation (form-encoded)."""
    from urllib.parse import urlencode

    fields = {
        "token": "legacy-verification-token",
        "team_id": TEAM_ID,
        "team_domain": "fake-workspace",
        "channel_id": channel,
        "channel_name": "alerts",
        "user_id": user,
        "user_name": user.lower(),
        "command": command,
        "text": text,
        "api_app_id": "A0APP0001",
        "is_enterprise_install": "false",
        "response_url": response_url,
        "trigger_id": trigger_id,
    }
    return urlencode(fields).encode()


def block_action_body(
    action_id: str, value: str, *, user: str, channel: str, message_ts: str, trigger_id: str, response_url: str
) -> bytes:
    """A button click on a message (interactivity: form field `payload` holding JSON)."""
    payload = {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": TEAM_ID},
        "api_app_id": "A0APP0001",
        "token": "legacy-verification-token",
        "container": {"type": "message", "message_ts": message_ts, "channel_id": channel, "is_ephemeral": False},
        "trigger_id": trigger_id,
        "team": {"id": TEAM_ID, "domain": "fake-workspace"},
        "channel": {"id": channel, "name": "alerts"},
        "message": {"type": "message", "ts": message_ts, "user": BOT_USER_ID, "bot_id": BOT_ID, "text": ""},
        "response_url": response_url,
        "actions": [
            {
                "action_id": action_id,
                "block_id": "actions",
                "type": "button",
                "text": {"type": "plain_text", "text": action_id, "emoji": True},
                "value": value,
                "action_ts": "1700000100.000200",
            }
        ],
    }
    return _payload_form(payload)


def view_submission_body(view: dict, values: dict[str, dict], *, user: str, trigger_id: str) -> bytes:
    """A modal's submit: `view` as the app opened it, `values` as `state.values` (block_id -> action_id -> value)."""
    submitted = {
        **view,
        "id": view.get("id", "V0VIEW0001"),
        "team_id": TEAM_ID,
        "state": {"values": values},
        "hash": "1700000200.abcdef",
        "app_id": "A0APP0001",
        "bot_id": BOT_ID,
    }
    payload = {
        "type": "view_submission",
        "team": {"id": TEAM_ID, "domain": "fake-workspace"},
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": TEAM_ID},
        "api_app_id": "A0APP0001",
        "token": "legacy-verification-token",
        "trigger_id": trigger_id,
        "view": submitted,
        "response_urls": [],
        "is_enterprise_install": False,
    }
    return _payload_form(payload)


def submitted_state(view: dict, **changes: str) -> dict[str, dict]:
    """`state.values` of a modal submitted with its prefilled inputs, except `changes` (block_id=new value)."""
    values: dict[str, dict] = {}
    for block in view.get("blocks", []):
        if block.get("type") != "input":
            continue
        block_id, element = block["block_id"], block["element"]
        initial = (element.get("initial_option") or {}).get("value", element.get("initial_value"))
        value = changes.get(block_id, initial)
        if element["type"] in ("static_select", "external_select"):
            option = {"text": {"type": "plain_text", "text": str(value)}, "value": value}
            state = {"type": element["type"], "selected_option": option if value is not None else None}
        else:
            state = {"type": element["type"], "value": value}
        values[block_id] = {element["action_id"]: state}
    return values


def app_mention_body(
    text: str, *, user: str, channel: str, ts: str, event_id: str, thread_ts: str | None = None
) -> bytes:
    """An Events API `app_mention` delivery (JSON)."""
    mention: dict[str, Any] = {
        "type": "app_mention",
        "user": user,
        "text": text,
        "ts": ts,
        "channel": channel,
        "event_ts": ts,
    }
    if thread_ts:
        mention["thread_ts"] = thread_ts
    body = {
        "token": "legacy-verification-token",
        "team_id": TEAM_ID,
        "api_app_id": "A0APP0001",
        "event": mention,
        "type": "event_callback",
        "event_id": event_id,
        "event_time": int(float(ts)),
        "authorizations": [{"team_id": TEAM_ID, "user_id": BOT_USER_ID, "is_bot": True}],
    }
    return json.dumps(body).encode()


def _payload_form(payload: dict) -> bytes:
    from urllib.parse import urlencode

    return urlencode({"payload": json.dumps(payload)}).encode()
