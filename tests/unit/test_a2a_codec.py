"""The A2A HTTP wire codec (``transports.a2a_http``) against what the official SDK puts on the wire.

The golden JSON and SSE bytes below were produced by a2a-sdk 1.3.0 (the official Python
SDK): ``MessageToDict`` of its protobuf objects, its 0.3 compatibility conversions, its
error builders, and real HTTP traffic of an SDK server (JSON-RPC and REST, 0.3 compatibility
on). The SDK cannot be imported here (it owns the top-level ``a2a`` package), so its output
is pasted as literals.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transports.a2a_http import (
    A2AProtocolError,
    AgentCard,
    Message,
    Operation,
    Part,
    SendMessageRequest,
    SendMessageResponse,
    SSEDecoder,
    SSEError,
    SSEEvent,
    StreamResponse,
    Task,
    TaskStatus,
    TaskStatusUpdateEvent,
    agent_card_json,
    codec,
    decode_params,
    error_from_jsonrpc,
    error_from_rest,
    error_response,
    format_comment,
    format_event,
    iter_sse_bytes,
    iter_sse_lines,
    parse_agent_card,
    parse_get_task_query,
    parse_list_tasks_query,
    parse_request,
    request_version,
    resolve_method,
    rest_error_body,
    result_of,
    send_message_response,
    stream_response,
    success_response,
    version_compatible,
)
from transports.a2a_http import compat03 as c03
from transports.a2a_http import compat03_params as p03
from transports.a2a_http import compat03_rest as r03
from transports.a2a_http import errors as E
from transports.a2a_http.compat03_card import card_to_03
from transports.a2a_http.jsonrpc import JsonRpcRequestError
from transports.a2a_http.methods import GetTaskRequest, ListTasksRequest
from transports.a2a_http.rest import list_tasks_query
from transports.a2a_http.types03 import DataPart03, Task03
from transports.a2a_http.versions import is_legacy_version

pytestmark = pytest.mark.anyio

# Produced by a2a-sdk 1.3.0 (see the module docstring).
GOLDEN: dict[str, Any] = json.loads(
    """
{
  "agent_card_served": {
    "additionalInterfaces": [
      {
        "transport": "HTTP+JSON",
        "url": "http://127.0.0.1:8765/rest"
      }
    ],
    "capabilities": {"pushNotifications": false, "streaming": true},
    "defaultInputModes": ["text/plain"],
    "defaultOutputModes": ["text/plain", "application/json"],
    "description": "Echoes",
    "name": "Echo",
    "preferredTransport": "JSONRPC",
    "protocolVersion": "0.3",
    "provider": {"organization": "Acme", "url": "https://acme.example"},
    "security": [{"apikey": []}, {"bearer": ["read"]}],
    "securityRequirements": [
      {"schemes": {"apikey": {}}},
      {"schemes": {"bearer": {"list": ["read"]}}}
    ],
    "securitySchemes": {
      "apikey": {
        "apiKeySecurityScheme": {
          "description": "key",
          "location": "header",
          "name": "X-API-Key"
        },
        "description": "key",
        "in": "header",
        "name": "X-API-Key",
        "type": "apiKey"
      },
      "bearer": {
        "bearerFormat": "JWT",
        "httpAuthSecurityScheme": {
          "bearerFormat": "JWT",
          "scheme": "Bearer"
        },
        "scheme": "Bearer",
        "type": "http"
      }
    },
    "skills": [
      {
        "description": "Echo back",
        "examples": ["hi"],
        "id": "echo",
        "name": "Echo",
        "tags": ["echo"]
      }
    ],
    "supportedInterfaces": [
      {
        "protocolBinding": "JSONRPC",
        "protocolVersion": "1.0",
        "url": "http://127.0.0.1:8765/rpc"
      },
      {
        "protocolBinding": "HTTP+JSON",
        "protocolVersion": "1.0",
        "url": "http://127.0.0.1:8765/rest"
      },
      {
        "protocolBinding": "JSONRPC",
        "protocolVersion": "0.3",
        "url": "http://127.0.0.1:8765/rpc"
      },
      {
        "protocolBinding": "HTTP+JSON",
        "protocolVersion": "0.3",
        "url": "http://127.0.0.1:8765/rest"
      }
    ],
    "url": "http://127.0.0.1:8765/rpc",
    "version": "1.2.3"
  },
  "jsonrpc_error_params_v1": {
    "error": {
      "code": -32602,
      "data": [
        {
          "@type": "type.googleapis.com/google.rpc.ErrorInfo",
          "domain": "a2a-protocol.org",
          "metadata": {
            "errors": [
              {
                "field": "message.role",
                "message": "Field is required."
              }
            ]
          },
          "reason": "INVALID_PARAMS"
        },
        {
          "@type": "type.googleapis.com/google.rpc.BadRequest",
          "fieldViolations": [
            {
              "description": "Field is required.",
              "field": "message.role"
            }
          ]
        }
      ],
      "message": "Validation failed"
    },
    "id": 8,
    "jsonrpc": "2.0"
  },
  "jsonrpc_error_v03": {
    "error": {"code": -32603, "data": null, "message": "nope"},
    "id": "q",
    "jsonrpc": "2.0"
  },
  "jsonrpc_error_v1": {
    "error": {
      "code": -32001,
      "data": [
        {
          "@type": "type.googleapis.com/google.rpc.ErrorInfo",
          "domain": "a2a-protocol.org",
          "metadata": {},
          "reason": "TASK_NOT_FOUND"
        }
      ],
      "message": "Task not found"
    },
    "id": "7",
    "jsonrpc": "2.0"
  },
  "rest03_request_from_sdk_client": {
    "configuration": {"blocking": true},
    "request": {
      "content": [{"text": "hello"}],
      "message_id": "c1",
      "role": "ROLE_USER"
    }
  },
  "rest_error_v1": {
    "error": {
      "code": 404,
      "details": [
        {
          "@type": "type.googleapis.com/google.rpc.ErrorInfo",
          "domain": "a2a-protocol.org",
          "metadata": {},
          "reason": "TASK_NOT_FOUND"
        }
      ],
      "message": "Task not found",
      "status": "NOT_FOUND"
    }
  },
  "send_params_v03": {
    "configuration": {
      "acceptedOutputModes": ["text/plain"],
      "blocking": false,
      "historyLength": 5
    },
    "message": {
      "contextId": "c1",
      "extensions": ["urn:ext"],
      "kind": "message",
      "messageId": "m1",
      "parts": [
        {
          "kind": "text",
          "metadata": {"lang": "en"},
          "text": "hello"
        },
        {
          "file": {
            "bytes": "AAFoaQ==",
            "mimeType": "application/octet-stream",
            "name": "hi.bin"
          },
          "kind": "file"
        },
        {
          "file": {
            "mimeType": "image/png",
            "uri": "https://x.example/y.png"
          },
          "kind": "file"
        },
        {"data": {"a": 1.0, "b": [true, null]}, "kind": "data"},
        {
          "data": {"value": ["x", 2.0]},
          "kind": "data",
          "metadata": {"data_part_compat": true}
        }
      ],
      "referenceTaskIds": ["t0"],
      "role": "user",
      "taskId": "t1"
    },
    "metadata": {"trace": "1"}
  },
  "send_params_v03_from_sdk_client": {
    "configuration": {"blocking": true},
    "message": {
      "kind": "message",
      "messageId": "c1",
      "parts": [{"kind": "text", "text": "hello"}],
      "role": "user"
    }
  },
  "send_request_v1": {
    "configuration": {
      "acceptedOutputModes": ["text/plain"],
      "historyLength": 5,
      "returnImmediately": true
    },
    "message": {
      "contextId": "c1",
      "extensions": ["urn:ext"],
      "messageId": "m1",
      "parts": [
        {"metadata": {"lang": "en"}, "text": "hello"},
        {
          "filename": "hi.bin",
          "mediaType": "application/octet-stream",
          "raw": "AAFoaQ=="
        },
        {
          "mediaType": "image/png",
          "url": "https://x.example/y.png"
        },
        {"data": {"a": 1.0, "b": [true, null]}},
        {"data": ["x", 2.0]}
      ],
      "referenceTaskIds": ["t0"],
      "role": "ROLE_USER",
      "taskId": "t1"
    },
    "metadata": {"trace": "1"}
  },
  "send_response_message_v1": {
    "message": {
      "messageId": "m2",
      "parts": [{"text": "need more"}],
      "role": "ROLE_AGENT"
    }
  },
  "send_response_task_v1": {
    "task": {
      "artifacts": [
        {
          "artifactId": "a1",
          "metadata": {"k": "v"},
          "name": "out",
          "parts": [{"text": "result"}]
        }
      ],
      "contextId": "c1",
      "history": [
        {
          "contextId": "c1",
          "extensions": ["urn:ext"],
          "messageId": "m1",
          "parts": [
            {
              "metadata": {"lang": "en"},
              "text": "hello"
            },
            {
              "filename": "hi.bin",
              "mediaType": "application/octet-stream",
              "raw": "AAFoaQ=="
            },
            {
              "mediaType": "image/png",
              "url": "https://x.example/y.png"
            },
            {"data": {"a": 1.0, "b": [true, null]}},
            {"data": ["x", 2.0]}
          ],
          "referenceTaskIds": ["t0"],
          "role": "ROLE_USER",
          "taskId": "t1"
        }
      ],
      "id": "t1",
      "metadata": {"owner": "me"},
      "status": {
        "message": {
          "messageId": "m2",
          "parts": [{"text": "need more"}],
          "role": "ROLE_AGENT"
        },
        "state": "TASK_STATE_INPUT_REQUIRED",
        "timestamp": "2026-01-02T03:04:05.123456Z"
      }
    }
  },
  "stream_artifact_v03": {
    "id": "r1",
    "jsonrpc": "2.0",
    "result": {
      "append": true,
      "artifact": {
        "artifactId": "a2",
        "parts": [{"kind": "text", "text": "chunk"}]
      },
      "contextId": "c1",
      "kind": "artifact-update",
      "lastChunk": true,
      "taskId": "t1"
    }
  },
  "stream_artifact_v1": {
    "artifactUpdate": {
      "append": true,
      "artifact": {
        "artifactId": "a2",
        "parts": [{"text": "chunk"}]
      },
      "contextId": "c1",
      "lastChunk": true,
      "taskId": "t1"
    }
  },
  "stream_status_rest_v03": {
    "statusUpdate": {
      "contextId": "c1",
      "final": true,
      "status": {
        "state": "TASK_STATE_COMPLETED",
        "timestamp": "2026-01-02T03:04:06Z"
      },
      "taskId": "t1"
    }
  },
  "stream_status_v03": {
    "id": "r1",
    "jsonrpc": "2.0",
    "result": {
      "contextId": "c1",
      "final": true,
      "kind": "status-update",
      "status": {
        "state": "completed",
        "timestamp": "2026-01-02T03:04:06Z"
      },
      "taskId": "t1"
    }
  },
  "stream_status_v1": {
    "statusUpdate": {
      "contextId": "c1",
      "status": {
        "state": "TASK_STATE_COMPLETED",
        "timestamp": "2026-01-02T03:04:06Z"
      },
      "taskId": "t1"
    }
  },
  "task_rest_v03": {
    "artifacts": [
      {
        "artifactId": "a1",
        "metadata": {"k": "v"},
        "name": "out",
        "parts": [{"text": "result"}]
      }
    ],
    "contextId": "c1",
    "history": [
      {
        "content": [
          {"metadata": {"lang": "en"}, "text": "hello"},
          {
            "file": {
              "fileWithBytes": "QUFGb2FRPT0=",
              "mimeType": "application/octet-stream",
              "name": "hi.bin"
            }
          },
          {
            "file": {
              "fileWithUri": "https://x.example/y.png",
              "mimeType": "image/png"
            }
          },
          {"data": {"data": {"a": 1.0, "b": [true, null]}}},
          {
            "data": {"data": {"value": ["x", 2.0]}},
            "metadata": {"data_part_compat": true}
          }
        ],
        "contextId": "c1",
        "extensions": ["urn:ext"],
        "messageId": "m1",
        "role": "ROLE_USER",
        "taskId": "t1"
      }
    ],
    "id": "t1",
    "metadata": {"owner": "me"},
    "status": {
      "message": {
        "content": [{"text": "need more"}],
        "messageId": "m2",
        "role": "ROLE_AGENT"
      },
      "state": "TASK_STATE_INPUT_REQUIRED",
      "timestamp": "2026-01-02T03:04:05.123456Z"
    }
  },
  "task_v03": {
    "artifacts": [
      {
        "artifactId": "a1",
        "metadata": {"k": "v"},
        "name": "out",
        "parts": [{"kind": "text", "text": "result"}]
      }
    ],
    "contextId": "c1",
    "history": [
      {
        "contextId": "c1",
        "extensions": ["urn:ext"],
        "kind": "message",
        "messageId": "m1",
        "parts": [
          {"kind": "text", "metadata": {"lang": "en"}, "text": "hello"},
          {
            "file": {
              "bytes": "AAFoaQ==",
              "mimeType": "application/octet-stream",
              "name": "hi.bin"
            },
            "kind": "file"
          },
          {
            "file": {
              "mimeType": "image/png",
              "uri": "https://x.example/y.png"
            },
            "kind": "file"
          },
          {"data": {"a": 1.0, "b": [true, null]}, "kind": "data"},
          {
            "data": {"value": ["x", 2.0]},
            "kind": "data",
            "metadata": {"data_part_compat": true}
          }
        ],
        "referenceTaskIds": ["t0"],
        "role": "user",
        "taskId": "t1"
      }
    ],
    "id": "t1",
    "kind": "task",
    "metadata": {"owner": "me"},
    "status": {
      "message": {
        "kind": "message",
        "messageId": "m2",
        "parts": [{"kind": "text", "text": "need more"}],
        "role": "agent"
      },
      "state": "input-required",
      "timestamp": "2026-01-02T03:04:05.123456Z"
    }
  },
  "task_v1": {
    "artifacts": [
      {
        "artifactId": "a1",
        "metadata": {"k": "v"},
        "name": "out",
        "parts": [{"text": "result"}]
      }
    ],
    "contextId": "c1",
    "history": [
      {
        "contextId": "c1",
        "extensions": ["urn:ext"],
        "messageId": "m1",
        "parts": [
          {"metadata": {"lang": "en"}, "text": "hello"},
          {
            "filename": "hi.bin",
            "mediaType": "application/octet-stream",
            "raw": "AAFoaQ=="
          },
          {"mediaType": "image/png", "url": "https://x.example/y.png"},
          {"data": {"a": 1.0, "b": [true, null]}},
          {"data": ["x", 2.0]}
        ],
        "referenceTaskIds": ["t0"],
        "role": "ROLE_USER",
        "taskId": "t1"
      }
    ],
    "id": "t1",
    "metadata": {"owner": "me"},
    "status": {
      "message": {
        "messageId": "m2",
        "parts": [{"text": "need more"}],
        "role": "ROLE_AGENT"
      },
      "state": "TASK_STATE_INPUT_REQUIRED",
      "timestamp": "2026-01-02T03:04:05.123456Z"
    }
  }
}
"""
)

# Raw SSE bodies of an a2a-sdk 1.3.0 server: SendStreamingMessage (1.0) and message/stream (0.3).
SSE_V1 = (
    b'data: {"result": {"task": {"id": "516bd7ac-dd33-4314-93d9-4a1b3abe71bb", "contextId"'
    b': "3f0fbb64-d601-4528-a3ea-3fdd78bb64c1", "status": {"state": "TASK_STATE_SUBMITTED"'
    b'}, "history": [{"messageId": "s9", "contextId": "3f0fbb64-d601-4528-a3ea-3fdd78bb64c'
    b'1", "taskId": "516bd7ac-dd33-4314-93d9-4a1b3abe71bb", "role": "ROLE_USER", "parts": '
    b'[{"text": "hi"}]}]}}, "id": 7, "jsonrpc": "2.0"}\r\n\r\ndata: {"result": {"statusUpdate"'
    b': {"taskId": "516bd7ac-dd33-4314-93d9-4a1b3abe71bb", "contextId": "3f0fbb64-d601-452'
    b'8-a3ea-3fdd78bb64c1", "status": {"state": "TASK_STATE_WORKING", "timestamp": "2026-1'
    b'1-23T09:25:55.661937Z"}}}, "id": 7, "jsonrpc": "2.0"}\r\n\r\ndata: {"result": {"artifact'
    b'Update": {"taskId": "516bd7ac-dd33-4314-93d9-4a1b3abe71bb", "contextId": "3f0fbb64-d'
    b'601-4528-a3ea-3fdd78bb64c1", "artifact": {"artifactId": "a1", "name": "out", "parts"'
    b': [{"text": "echo:hi"}, {"text": "x"}]}}}, "id": 7, "jsonrpc": "2.0"}\r\n\r\ndata: {"res'
    b'ult": {"statusUpdate": {"taskId": "516bd7ac-dd33-4314-93d9-4a1b3abe71bb", "contextId'
    b'": "3f0fbb64-d601-4528-a3ea-3fdd78bb64c1", "status": {"state": "TASK_STATE_COMPLETED'
    b'", "timestamp": "2026-11-23T09:25:55.662043Z"}}}, "id": 7, "jsonrpc": "2.0"}\r\n\r\n'
)
SSE_V03 = (
    b'data: {"id":"s03","jsonrpc":"2.0","result":{"contextId":"06cfead6-f60a-4070-8bea-956'
    b'39730a67b","history":[{"contextId":"06cfead6-f60a-4070-8bea-95639730a67b","kind":"me'
    b'ssage","messageId":"o9","parts":[{"kind":"text","text":"hi"}],"role":"user","taskId"'
    b':"a05243ad-ceb2-4104-a7ac-4edb9869e0b7"}],"id":"a05243ad-ceb2-4104-a7ac-4edb9869e0b7'
    b'","kind":"task","status":{"state":"submitted"}}}\r\n\r\ndata: {"id":"s03","jsonrpc":"2.0'
    b'","result":{"contextId":"06cfead6-f60a-4070-8bea-95639730a67b","final":false,"kind":'
    b'"status-update","status":{"state":"working","timestamp":"2026-11-23T09:25:55.676319Z'
    b'"},"taskId":"a05243ad-ceb2-4104-a7ac-4edb9869e0b7"}}\r\n\r\ndata: {"id":"s03","jsonrpc":'
    b'"2.0","result":{"append":false,"artifact":{"artifactId":"a1","name":"out","parts":[{'
    b'"kind":"text","text":"echo:hi"},{"kind":"text","text":"x"}]},"contextId":"06cfead6-f'
    b'60a-4070-8bea-95639730a67b","kind":"artifact-update","lastChunk":false,"taskId":"a05'
    b'243ad-ceb2-4104-a7ac-4edb9869e0b7"}}\r\n\r\ndata: {"id":"s03","jsonrpc":"2.0","result":{'
    b'"contextId":"06cfead6-f60a-4070-8bea-95639730a67b","final":true,"kind":"status-updat'
    b'e","status":{"state":"completed","timestamp":"2026-11-23T09:25:55.676413Z"},"taskId"'
    b':"a05243ad-ceb2-4104-a7ac-4edb9869e0b7"}}\r\n\r\n'
)


def pretty_diff(ours: Any, theirs: Any) -> str:
    return f"\nours:   {json.dumps(ours, sort_keys=True)}\ntheirs: {json.dumps(theirs, sort_keys=True)}"


# 1.0 objects -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "type_"),
    [
        ("task_v1", Task),
        ("send_response_task_v1", SendMessageResponse),
        ("send_response_message_v1", SendMessageResponse),
        ("stream_status_v1", StreamResponse),
        ("stream_artifact_v1", StreamResponse),
        ("send_request_v1", SendMessageRequest),
    ],
)
def test_sdk_v1_json_round_trips_exactly(key: str, type_: type[Any]) -> None:
    decoded = codec.decode(json.dumps(GOLDEN[key]), type_)
    again = codec.decode(codec.encode(decoded))
    assert again == GOLDEN[key], pretty_diff(again, GOLDEN[key])


def test_sdk_task_decodes_to_the_expected_values() -> None:
    task = codec.convert(GOLDEN["task_v1"], Task)
    assert task.status.state == "TASK_STATE_INPUT_REQUIRED"
    assert task.status.message is not None and task.status.message.role == "ROLE_AGENT"
    text, raw, url, obj, lst = task.history[0].parts
    assert text.text == "hello" and text.metadata == {"lang": "en"}
    assert raw.raw == b"\x00\x01hi" and raw.filename == "hi.bin"
    assert url.url == "https://x.example/y.png" and url.media_type == "image/png"
    assert obj.data == {"a": 1.0, "b": [True, None]}
    assert lst.data == ["x", 2.0]
    assert task.history[0].reference_task_ids == ["t0"]


def test_wrappers_pick_the_right_oneof_key() -> None:
    task = codec.convert(GOLDEN["task_v1"], Task)
    message = codec.convert(GOLDEN["send_response_message_v1"], SendMessageResponse).result
    assert codec.to_builtins(send_message_response(task)) == GOLDEN["send_response_task_v1"]
    assert codec.to_builtins(send_message_response(message)) == GOLDEN["send_response_message_v1"]
    update = codec.convert(GOLDEN["stream_status_v1"], StreamResponse).event
    assert isinstance(update, TaskStatusUpdateEvent)
    assert codec.to_builtins(stream_response(update)) == GOLDEN["stream_status_v1"]
    assert codec.convert(GOLDEN["send_response_task_v1"], SendMessageResponse).result == task


def test_list_tasks_response_with_sdk_empty_defaults_decodes() -> None:
    # ListTasks is serialised with always_print_fields_with_no_presence: "" and [] everywhere.
    body = {
        "tasks": [
            {
                "id": "t",
                "contextId": "c",
                "status": {"state": "TASK_STATE_COMPLETED"},
                "history": [
                    {
                        "messageId": "m",
                        "role": "ROLE_USER",
                        "parts": [{"text": "hi", "filename": "", "mediaType": ""}],
                        "extensions": [],
                        "referenceTaskIds": [],
                    }
                ],
                "artifacts": [],
            }
        ],
        "nextPageToken": "",
        "pageSize": 50,
        "totalSize": 1,
    }
    from transports.a2a_http import ListTasksResponse

    page = codec.convert(body, ListTasksResponse)
    assert page.tasks[0].history[0].parts[0].text == "hi"
    assert codec.to_builtins(ListTasksResponse(tasks=[])) == {
        "tasks": [],
        "nextPageToken": "",
        "pageSize": 0,
        "totalSize": 0,
    }


def test_unknown_fields_are_ignored() -> None:
    body = {"id": "t", "status": {"state": "TASK_STATE_WORKING", "future": 1}, "kind": "task", "x": {"y": []}}
    assert codec.convert(body, Task) == Task(id="t", status=TaskStatus(state="TASK_STATE_WORKING"))


@pytest.mark.parametrize(
    ("raw", "type_"),
    [
        (b"", Task),
        (b"{", Task),
        (b"[]", Task),
        (b'{"id": "t"}', Task),
        (b'{"id": 5, "status": {"state": "TASK_STATE_WORKING"}}', Task),
        (b'{"id": "t", "status": {"state": "DONE"}}', Task),
        (b'{"messageId": "m", "role": "user", "parts": []}', Message),
        (b'{"messageId": "m", "role": "ROLE_USER"}', Message),
        (b'{"text": "a", "url": "b"}', Part),
        (b"{}", Part),
        (b'{"raw": "not base64!"}', Part),
        (b"{}", StreamResponse),
        (
            b'{"task": {"id": "t", "status": {"state": "TASK_STATE_WORKING"}},'
            b' "statusUpdate": {"taskId": "t"}}',
            StreamResponse,
        ),
        (b'{"historyLength": -1, "id": "t"}', GetTaskRequest),
        (b'{"id": "' + b"x" * 2000 + b'", "status": {"state": "TASK_STATE_WORKING"}}', Task),
        (b"[" * 100_000 + b"]" * 100_000, Task),
        (b'{"data": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", Part),
    ],
)
def test_malformed_input_is_rejected_with_a_msgspec_error(raw: bytes, type_: type[Any]) -> None:
    with pytest.raises(msgspec.MsgspecError):
        codec.decode(raw, type_)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_only_ever_raise_msgspec_errors(raw: bytes) -> None:
    for type_ in (StreamResponse, SendMessageRequest, Task):
        with contextlib.suppress(msgspec.MsgspecError):
            codec.decode(raw, type_)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)
shaped = st.fixed_dictionaries(
    {},
    optional={
        "kind": st.sampled_from(["task", "message", "status-update", "artifact-update", "text", "?"]),
        "id": json_values,
        "messageId": json_values,
        "taskId": json_values,
        "final": json_values,
        "parts": st.lists(json_values, max_size=3),
        "message": json_values,
        "status": json_values,
        "url": json_values,
        "supportedInterfaces": json_values,
        "securitySchemes": st.dictionaries(st.text(max_size=4), json_values, max_size=2),
        "security": json_values,
        "skills": json_values,
        "content": json_values,
        "request": json_values,
    },
)


@settings(max_examples=300, deadline=None)
@given(json_values | shaped)
def test_arbitrary_json_never_crashes_the_converters(obj: Any) -> None:
    calls: list[Callable[[], object]] = [
        lambda: c03.decode_result_03(obj),
        lambda: p03.params_from_03("message/send", obj),
        lambda: p03.params_from_03("tasks/get", obj),
        lambda: parse_agent_card(obj),
        lambda: r03.decode_send_request_pb03(obj),
        lambda: r03.decode_stream_response_pb03(obj),
        lambda: decode_params(resolve_method("SendMessage"), obj),
        lambda: decode_params(resolve_method("message/stream"), obj),
        lambda: error_from_jsonrpc(obj),
        lambda: error_from_rest(400, obj),
    ]
    for call in calls:
        with contextlib.suppress(msgspec.MsgspecError, A2AProtocolError):
            call()


# 0.3 JSON-RPC dialect ----------------------------------------------------------------------


def test_task_converts_to_the_sdk_0_3_json_and_back() -> None:
    task = codec.convert(GOLDEN["task_v1"], Task)
    ours = codec.to_builtins(c03.task_to_03(task))
    assert ours == GOLDEN["task_v03"], pretty_diff(ours, GOLDEN["task_v03"])
    assert c03.task_from_03(codec.convert(GOLDEN["task_v03"], Task03)) == task


@pytest.mark.parametrize("key", ["stream_status_v03", "stream_artifact_v03"])
def test_stream_events_convert_to_the_sdk_0_3_events_and_back(key: str) -> None:
    v1 = codec.convert(GOLDEN[key.replace("v03", "v1")], StreamResponse)
    ours = codec.to_builtins(success_response("r1", c03.stream_result_to_03(v1)))
    assert ours == GOLDEN[key], pretty_diff(ours, GOLDEN[key])
    assert c03.stream_result_from_03(c03.decode_result_03(GOLDEN[key]["result"])) == v1


@pytest.mark.parametrize(
    ("state", "final"),
    [
        ("TASK_STATE_WORKING", False),
        ("TASK_STATE_INPUT_REQUIRED", False),
        ("TASK_STATE_AUTH_REQUIRED", False),
        ("TASK_STATE_COMPLETED", True),
        ("TASK_STATE_CANCELED", True),
        ("TASK_STATE_FAILED", True),
        ("TASK_STATE_REJECTED", True),
    ],
)
def test_0_3_final_flag_follows_the_state_as_the_sdk_computes_it(state: Any, final: bool) -> None:
    event = TaskStatusUpdateEvent(task_id="t", context_id="c", status=TaskStatus(state=state))
    legacy = codec.to_builtins(c03.stream_result_to_03(stream_response(event)))
    assert legacy["final"] is final and legacy["kind"] == "status-update"


def test_send_params_convert_like_the_sdk_in_both_directions() -> None:
    request = codec.convert(GOLDEN["send_request_v1"], SendMessageRequest)
    ours = codec.to_builtins(p03.send_request_to_03(request))
    assert ours == GOLDEN["send_params_v03"], pretty_diff(ours, GOLDEN["send_params_v03"])
    assert p03.params_from_03("message/send", GOLDEN["send_params_v03"]) == request


def test_sdk_0_3_client_request_is_blocking_and_history_zero_means_all() -> None:
    request = p03.params_from_03("message/stream", GOLDEN["send_params_v03_from_sdk_client"])
    assert request.configuration is not None and request.configuration.return_immediately is False
    assert request.message.role == "ROLE_USER" and request.message.parts[0].text == "hello"
    unset = p03.params_from_03("tasks/get", {"id": "t", "historyLength": 0})
    assert unset == GetTaskRequest(id="t")
    assert p03.params_from_03("tasks/get", {"id": "t", "historyLength": 2}).history_length == 2


def test_0_3_parts_and_results_without_kind_are_inferred() -> None:
    params = {"message": {"messageId": "m", "role": "agent", "parts": [{"text": "a"}, {"data": {"k": 1}}]}}
    request = p03.params_from_03("message/send", params)
    assert [p.text for p in request.message.parts] == ["a", None]
    assert request.message.parts[1].data == {"k": 1}
    assert request.message.role == "ROLE_AGENT"
    kindless = {"taskId": "t", "contextId": "c", "final": True, "status": {"state": "completed"}}
    assert isinstance(c03.stream_result_from_03(c03.decode_result_03(kindless)).event, TaskStatusUpdateEvent)
    task = c03.decode_result_03({"id": "t", "contextId": "c", "status": {"state": "working"}})
    assert isinstance(task, Task03) and task.id == "t"
    with pytest.raises(msgspec.ValidationError):
        c03.decode_result_03({"kind": "other"})


def test_0_3_metadata_is_never_rewritten() -> None:
    params = {
        "message": {
            "kind": "message",
            "messageId": "m",
            "role": "user",
            "parts": [{"kind": "text", "text": "a", "metadata": {"parts": [{"text": "keep"}]}}],
        }
    }
    part = p03.params_from_03("message/send", params).message.parts[0]
    assert part.metadata == {"parts": [{"text": "keep"}]}


def test_non_object_data_travels_wrapped_in_0_3() -> None:
    part = Part(data=[1, 2])
    legacy = codec.to_builtins(c03.part_to_03(part))
    assert legacy == {"kind": "data", "data": {"value": [1, 2]}, "metadata": {"data_part_compat": True}}
    assert c03.part_from_03(codec.convert(legacy, DataPart03)) == part


def test_0_3_methods_resolve_and_1_0_methods_decode() -> None:
    assert resolve_method("tasks/resubscribe").operation is Operation.SUBSCRIBE_TO_TASK
    assert resolve_method("tasks/resubscribe").legacy
    assert not resolve_method("SubscribeToTask").legacy
    assert Operation.SEND_STREAMING_MESSAGE.streaming and not Operation.GET_TASK.streaming
    with pytest.raises(A2AProtocolError) as caught:
        resolve_method("tasks/list")  # 0.3 has no ListTasks
    assert caught.value.spec is E.METHOD_NOT_FOUND
    cancel = decode_params(resolve_method("tasks/cancel"), {"id": "t", "metadata": {"why": "x"}})
    assert codec.to_builtins(cancel) == {"id": "t", "metadata": {"why": "x"}}


# 0.3 REST dialect --------------------------------------------------------------------------


def test_task_converts_to_the_sdk_0_3_rest_json() -> None:
    task = codec.convert(GOLDEN["task_v1"], Task)
    ours = codec.to_builtins(r03.task_to_pb03(task))
    assert ours == GOLDEN["task_rest_v03"], pretty_diff(ours, GOLDEN["task_rest_v03"])
    back = r03.decode_task_pb03(GOLDEN["task_rest_v03"])
    # The 0.3 proto has no referenceTaskIds; everything else survives, bytes included.
    assert back.history[0].reference_task_ids == []
    assert back.history[0].parts[1].raw == b"\x00\x01hi"
    assert back.history[1:] == task.history[1:] and back.status == task.status


def test_0_3_rest_status_update_matches_the_sdk() -> None:
    v1 = codec.convert(GOLDEN["stream_status_v1"], StreamResponse)
    assert codec.to_builtins(r03.stream_response_to_pb03(v1)) == GOLDEN["stream_status_rest_v03"]
    assert r03.decode_stream_response_pb03(GOLDEN["stream_status_rest_v03"]) == v1


def test_0_3_rest_accepts_the_sdk_clients_snake_case_body() -> None:
    request = r03.decode_send_request_pb03(GOLDEN["rest03_request_from_sdk_client"])
    assert request.message.message_id == "c1" and request.message.parts[0].text == "hello"
    assert request.configuration is not None and not request.configuration.return_immediately
    # protobuf's false: a configuration without `blocking` is non-blocking, as the SDK server does.
    body = {
        "message": {"messageId": "m", "role": "ROLE_USER", "content": [{"text": "x"}]},
        "configuration": {},
    }
    config = r03.decode_send_request_pb03(body).configuration
    assert config is not None and config.return_immediately
    sent = codec.to_builtins(r03.send_request_to_pb03(request))
    assert sent["configuration"] == {"blocking": True}
    with pytest.raises(msgspec.ValidationError):
        r03.decode_send_request_pb03(
            {"message": {"messageId": "m", "content": [{"file": {"fileWithBytes": "aGk="}}]}}
        )


# Errors ------------------------------------------------------------------------------------


def test_error_bodies_match_the_sdk() -> None:
    assert (
        codec.to_builtins(error_response("7", A2AProtocolError(E.TASK_NOT_FOUND)))
        == GOLDEN["jsonrpc_error_v1"]
    )
    violations = {"errors": [{"field": "message.role", "message": "Field is required."}]}
    invalid = A2AProtocolError(E.INVALID_PARAMS, "Validation failed", violations)
    assert codec.to_builtins(error_response(8, invalid)) == GOLDEN["jsonrpc_error_params_v1"]
    status, body = rest_error_body(A2AProtocolError(E.TASK_NOT_FOUND))
    assert (status, body) == (404, GOLDEN["rest_error_v1"])
    legacy = codec.to_builtins(
        error_response("q", A2AProtocolError(E.VERSION_NOT_SUPPORTED, "nope"), legacy=True)
    )
    expected = GOLDEN["jsonrpc_error_v03"]
    assert legacy["error"]["code"] == expected["error"]["code"] == -32603
    assert legacy["error"]["message"] == expected["error"]["message"]


def test_received_errors_map_back_like_the_sdk_client() -> None:
    with pytest.raises(A2AProtocolError) as caught:
        result_of(GOLDEN["jsonrpc_error_params_v1"])
    assert caught.value.spec is E.INVALID_PARAMS
    assert caught.value.data == {"errors": [{"field": "message.role", "message": "Field is required."}]}
    assert error_from_jsonrpc({"code": -32002, "message": "no", "data": {"x": 1}}).data == {"x": 1}
    unknown = error_from_jsonrpc({"code": -1, "message": "odd"})
    assert unknown.spec is E.INTERNAL_ERROR and unknown.code == -1
    assert error_from_rest(404, GOLDEN["rest_error_v1"]).spec is E.TASK_NOT_FOUND
    assert error_from_rest(404, "Not Found").spec is E.METHOD_NOT_FOUND
    assert error_from_rest(500, None).spec is E.INTERNAL_ERROR
    assert (
        error_from_rest(400, {"type": "TaskNotCancelableError", "message": "m"}).spec is E.TASK_NOT_CANCELABLE
    )
    assert result_of({"jsonrpc": "2.0", "id": 1, "result": None}) is None
    with pytest.raises(msgspec.ValidationError):
        result_of({"jsonrpc": "2.0", "id": 1})


def test_every_code_and_reason_is_unique() -> None:
    assert len({spec.code for spec in E.ERRORS}) == len(E.ERRORS)
    reasons = [spec.reason for spec in E.ERRORS if spec is not E.JSON_PARSE_ERROR]
    assert len(set(reasons)) == len(reasons)


# JSON-RPC envelopes ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "code", "request_id"),
    [
        (b"{nope", -32700, None),
        (b'[{"jsonrpc": "2.0", "id": 1, "method": "GetTask"}]', -32600, None),
        (b'"text"', -32600, None),
        (b'{"jsonrpc": "1.0", "id": 2, "method": "GetTask"}', -32600, 2),
        (b'{"jsonrpc": "2.0", "id": true, "method": "GetTask"}', -32600, None),
        (b'{"jsonrpc": "2.0", "id": 1.5, "method": "GetTask"}', -32600, None),
        (b'{"jsonrpc": "2.0", "id": "a"}', -32600, "a"),
        (b'{"jsonrpc": "2.0", "id": "a", "method": ""}', -32600, "a"),
    ],
)
def test_bad_envelopes_get_the_sdk_codes(body: bytes, code: int, request_id: object) -> None:
    with pytest.raises(JsonRpcRequestError) as caught:
        parse_request(body)
    assert caught.value.spec.code == code
    assert caught.value.request_id == request_id


def test_params_errors_keep_the_msgspec_cause() -> None:
    request = parse_request(
        b'{"jsonrpc": "2.0", "id": 3, "method": "SendMessage", "params": {"message": {}}}'
    )
    with pytest.raises(A2AProtocolError) as caught:
        decode_params(resolve_method(request.method), request.params)
    assert caught.value.spec is E.INVALID_PARAMS
    assert isinstance(caught.value.__cause__, msgspec.ValidationError)
    with pytest.raises(A2AProtocolError) as legacy:
        decode_params(resolve_method("message/send"), [1, 2])
    assert legacy.value.spec is E.INVALID_REQUEST


def test_a_notification_and_a_null_id_are_told_apart() -> None:
    assert parse_request(b'{"jsonrpc": "2.0", "method": "GetTask"}').id is msgspec.UNSET
    assert parse_request(b'{"jsonrpc": "2.0", "id": null, "method": "GetTask"}').id is None
    assert codec.decode(codec.encode(success_response(None, None))) == {
        "id": None,
        "jsonrpc": "2.0",
        "result": None,
    }


# Versions ----------------------------------------------------------------------------------


def test_version_header_rules_match_the_sdk() -> None:
    assert request_version({}) == "0.3"
    assert request_version({"a2a-version": " "}) == "0.3"
    assert request_version({"A2A-Version": "1.0"}) == "1.0"
    assert version_compatible("1.0", "1.0") and version_compatible("1.7", "1.0")
    assert not version_compatible("2.0", "1.0") and not version_compatible("0.3", "1.0")
    assert version_compatible("0.5", "0.3") and version_compatible("0.3.0", "0.3")
    assert not version_compatible("banana", "1.0")
    assert is_legacy_version("0.3.0") and not is_legacy_version("1.0") and not is_legacy_version("0.2")


# REST query strings ------------------------------------------------------------------------


def test_query_strings_of_the_sdk_rest_client_parse() -> None:
    # GET /tasks?status=TASK_STATE_COMPLETED&pageSize=2&historyLength=1&includeArtifacts=true
    query = {
        "status": ["TASK_STATE_COMPLETED"],
        "pageSize": ["2"],
        "historyLength": ["1"],
        "includeArtifacts": ["true"],
        "unknown": ["x"],
    }
    request = parse_list_tasks_query(query)
    assert request == ListTasksRequest(
        status="TASK_STATE_COMPLETED", page_size=2, history_length=1, include_artifacts=True
    )
    assert parse_list_tasks_query({k: v for k, v in query.items() if k != "unknown"}) == request
    assert list_tasks_query(request) == {k: v[0] for k, v in query.items() if k != "unknown"}
    assert parse_get_task_query("t", {"historyLength": ["0", "3"]}) == GetTaskRequest(
        id="t", history_length=3
    )
    for bad in ({"pageSize": ["two"]}, {"status": ["DONE"]}, {"historyLength": ["-1"]}):
        with pytest.raises(msgspec.ValidationError):
            parse_list_tasks_query(bad)


# Agent cards -------------------------------------------------------------------------------


def test_served_card_is_reproduced_exactly() -> None:
    card = parse_agent_card(GOLDEN["agent_card_served"])
    assert [i.protocol_version for i in card.supported_interfaces] == ["1.0", "1.0", "0.3", "0.3"]
    apikey = card.security_schemes["apikey"].api_key_security_scheme
    assert apikey is not None and apikey.location == "header" and apikey.name == "X-API-Key"
    ours = agent_card_json(card)
    assert ours == GOLDEN["agent_card_served"], pretty_diff(ours, GOLDEN["agent_card_served"])


def test_pure_0_3_card_is_read_like_the_sdk_resolver() -> None:
    legacy = {
        "name": "L",
        "description": "d",
        "version": "1",
        "url": "https://l.example/rpc",
        "additionalInterfaces": [{"url": "https://l.example/rest", "transport": "HTTP+JSON"}],
        "capabilities": {"streaming": True},
        "supportsAuthenticatedExtendedCard": True,
        "securitySchemes": {"k": {"type": "apiKey", "in": "query", "name": "key"}},
        "security": [{"k": []}],
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "s", "name": "S", "description": "d", "tags": [], "security": [{"k": ["r"]}]}],
    }
    card = parse_agent_card(legacy)
    assert [(i.url, i.protocol_binding, i.protocol_version) for i in card.supported_interfaces] == [
        ("https://l.example/rpc", "JSONRPC", "0.3.0"),
        ("https://l.example/rest", "HTTP+JSON", "0.3.0"),
    ]
    assert card.capabilities.extended_agent_card is True
    scheme = card.security_schemes["k"].api_key_security_scheme
    assert scheme is not None and scheme.location == "query"
    assert codec.to_builtins(card.security_requirements) == [{"schemes": {"k": {}}}]
    assert codec.to_builtins(card.skills[0].security_requirements) == [{"schemes": {"k": {"list": ["r"]}}}]
    served = agent_card_json(card)
    assert served["url"] == "https://l.example/rpc" and served["protocolVersion"] == "0.3.0"
    assert served["supportsAuthenticatedExtendedCard"] is True
    assert (
        served["securitySchemes"]["k"]["type"] == "apiKey" and served["securitySchemes"]["k"]["in"] == "query"
    )


def test_a_1_0_only_card_carries_no_0_3_keys() -> None:
    card = parse_agent_card(GOLDEN["agent_card_served"])
    only_v1 = msgspec.structs.replace(
        card, supported_interfaces=[i for i in card.supported_interfaces if i.protocol_version == "1.0"]
    )
    assert card_to_03(only_v1) is None
    assert set(agent_card_json(only_v1)) == set(codec.to_builtins(only_v1))
    assert "url" not in agent_card_json(only_v1)
    with pytest.raises(msgspec.ValidationError):
        parse_agent_card({"name": "x"})
    with pytest.raises(msgspec.ValidationError):
        codec.convert(["not", "a", "card"], AgentCard)


# SSE ---------------------------------------------------------------------------------------


async def _chunks(data: bytes, size: int) -> AsyncIterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


async def _collect(stream: AsyncIterator[SSEEvent]) -> list[SSEEvent]:
    return [event async for event in stream]


async def test_sdk_jsonrpc_stream_parses_into_its_four_events() -> None:
    events = await _collect(iter_sse_bytes(_chunks(SSE_V1, 4096)))
    assert [e.event for e in events] == ["message"] * 4
    results = [codec.convert(result_of(json.loads(e.data)), StreamResponse).event for e in events]
    assert [type(r).__name__ for r in results] == [
        "Task",
        "TaskStatusUpdateEvent",
        "TaskArtifactUpdateEvent",
        "TaskStatusUpdateEvent",
    ]
    assert all(json.loads(e.data)["id"] == 7 for e in events)


async def test_sdk_0_3_stream_parses_and_converts() -> None:
    events = await _collect(iter_sse_bytes(_chunks(SSE_V03, 4096)))
    results = [c03.decode_result_03(result_of(json.loads(e.data))) for e in events]
    assert [type(r).__name__ for r in results] == [
        "Task03",
        "TaskStatusUpdateEvent03",
        "TaskArtifactUpdateEvent03",
        "TaskStatusUpdateEvent03",
    ]
    assert [getattr(r, "final", None) for r in results] == [None, False, None, True]


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64])
async def test_splitting_the_stream_anywhere_changes_nothing(size: int) -> None:
    whole = await _collect(iter_sse_bytes(_chunks(SSE_V1, 1 << 20)))
    assert await _collect(iter_sse_bytes(_chunks(SSE_V1, size))) == whole
    lf = SSE_V1.replace(b"\r\n", b"\n")
    cr = SSE_V1.replace(b"\r\n", b"\r")
    assert await _collect(iter_sse_bytes(_chunks(lf, size))) == whole
    assert await _collect(iter_sse_bytes(_chunks(cr, size))) == whole


async def test_lines_from_httpx_parse_the_same() -> None:
    async def lines() -> AsyncIterator[str]:
        for line in SSE_V1.decode().split("\r\n"):
            yield line

    assert await _collect(iter_sse_lines(lines())) == await _collect(iter_sse_bytes(_chunks(SSE_V1, 100)))


def test_w3c_parsing_rules() -> None:
    decoder = SSEDecoder()
    raw = (
        b": ping - 2026-01-01\r\n\r\n"
        b'event: error\nid: 9\nretry: 15\ndata: {"a":\ndata:1}\n\n'
        b"data\n\n"
        b"id: 10\n\n"
        b"field-without-colon\nnonsense: x\ndata:  two spaces\n\n"
        b"data: unterminated"
    )
    events = decoder.feed(raw)
    assert events == [
        SSEEvent(data='{"a":\n1}', event="error", id="9", retry=15),
        SSEEvent(data="", event="message", id="9"),
        SSEEvent(data=" two spaces", event="message", id="10"),
    ]


def test_limits_and_garbage_raise_sse_errors() -> None:
    with pytest.raises(SSEError):
        SSEDecoder(max_line=10).feed(b"data: " + b"x" * 100 + b"\n")
    with pytest.raises(SSEError):
        SSEDecoder(max_line=10).feed(b"x" * 100)
    decoder = SSEDecoder(max_event=20)
    with pytest.raises(SSEError):
        decoder.feed(b"data: 0123456789\n" * 3)
    with pytest.raises(SSEError):
        SSEDecoder().feed(b"data: \xff\xfe\n\n")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200), st.integers(min_value=1, max_value=17))
def test_random_bytes_only_raise_sse_errors(raw: bytes, size: int) -> None:
    decoder = SSEDecoder(max_line=64, max_event=128)
    try:
        for i in range(0, len(raw), size):
            decoder.feed(raw[i : i + size])
    except SSEError:
        pass


async def test_formatted_events_parse_back() -> None:
    body = codec.encode(success_response(1, stream_response(codec.convert(GOLDEN["task_v1"], Task))))
    frame = format_event(body) + format_comment("ping") + format_event("a\nb", event="error", id="3")
    assert frame.startswith(b"data: {") and frame.count(b"\r\n\r\n") == 3
    events = await _collect(iter_sse_bytes(_chunks(frame, 5)))
    assert events == [SSEEvent(data=body.decode()), SSEEvent(data="a\nb", event="error", id="3")]
    with pytest.raises(ValueError):
        format_event("x", event="a\nb")
