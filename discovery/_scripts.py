"""The registry's server-side code: one Redis FUNCTION library (Redis 7+, valkey), one call per operation.

Key layout (``P`` = ``a2a:{<ns>}:``; the braces make a hash tag, so every key of a
namespace lands on one Redis Cluster slot):

    P inst:<id>     hash: name, status, load, capacity, lastSeen, profile (JSON),
                    caps (JSON id -> proficiency), trust (only an instance that publishes
                    one: a decimal in [0, 1]); expires unless heartbeats refresh it
    P instances     set of instance ids registered and not yet swept
    P capsof        hash: instance id -> the caps JSON it registered; outlives the
                    instance hash, so a sweep knows which sorted sets to prune
    P cap:<capId>   sorted set: instances with that capability that are not offline (available
                    or busy: readers check the status), score = proficiency
    P expiry        sorted set: instance id -> when its hash expires (ms, the server's clock);
                    the sweeper (EXPIRE) reads it to announce deaths as they happen
    P sweeper       string: the id of the runtime holding the sweeper's lease (expires)
    P grants        hash: agent name -> JSON {capabilities: [ids], maxInstances: n}, what
                    the roster lets each agent advertise; written by the admin only
                    (``a2a redis-config --load``). Without it (an open deployment) any
                    agent may advertise anything. With it, REGISTER refuses a capability
                    outside the agent's grant, or an instance over its maximum; HEARTBEAT
                    makes an instance whose grant was narrowed re-register; FIND_BEST
                    skips an instance whose agent is not granted what is asked for
    P insts:<name>  sorted set: the agent's instances -> when they expire (ms), kept with
                    grants only, to count its live instances; written with the agent's
                    own rights
    P events        pub/sub channel of change events (JSON: e = reg | st | down); functions
                    name it ``prefix .. 'events'`` (a channel is no key: ACL key
                    rights do not cover it, channel rights do)
    P events:cap:<capId>, P events:agent:<name>
                    the same events, each also published on the channel of every
                    capability of its instance and on its agent's: a view that routes
                    to a few capabilities follows their channels only

The library is loaded by a privileged user (``a2a redis-config --load``, or any runtime
whose user may, such as the default user of an open deployment); agents and clients may
only call it (FCALL / FCALL_RO), never load code of their own, so nothing they send can
keep Redis busy. Its name carries a version: a layout change ships as a new library
beside the old one (v2 added the trust field, and FIND_BEST weighs by it; v3 publishes a
heartbeat only when it changes what routing reads, and announces deaths from the expiry
set: views of v2 runtimes, which count heartbeats to judge liveness, need v3 too; v4 binds
what each agent may advertise, and how many instances it may run, to the roster's grants;
v5 publishes each event on per-capability and per-agent channels too, and keeps busy
instances in the capability sets, so a view can load one capability's instances and follow
its channel alone).

Every function's work is bounded per call, whatever the shared keys hold (every agent
may write ``instances``, ``capsof`` and ``cap:*``, and any bytes into its own hashes):
sets are read a page at a time (SSCAN / ZREVRANGE with a cursor or offset the caller
keeps), FIND_BEST stops after ``MAX_SEEN`` instances, SWEEP after ``SWEEP_BUDGET`` index
removals, JSON over ``MAX_BYTES`` is never decoded and entries over the size bounds are
answered by their size, not their bytes. A shared key of the wrong type reads as empty
and is replaced on write, so no agent can make the functions fail for everyone.

Under the ACLs of ``a2a redis-config`` Redis checks the caller's rights for every key a
function touches, so no function writes another agent's instance hash: the reads run as
FCALL_RO (``no-writes``), SWEEP prunes only index entries of hashes that expired.

The library also holds the conversation history's batch functions (``history.lua``, used
by :mod:`a2a.stores.history`): a batch of captured calls is written in one FCALL, and the
summaries it makes stale are read in one and written in one.
"""

from __future__ import annotations

from importlib import resources

from .limits import MAX_CAPABILITIES, MAX_FIELD_BYTES, MAX_INSTANCES, MAX_PROFILE_BYTES

__all__ = ["FUNCTIONS", "LIBRARY", "LOAD_STEP", "MAX_BEATS", "MAX_PAGE", "MAX_QUERY", "RETIRED", "SOURCE"]

LIBRARY = "a2a_registry_v5"
_FN = "a2a_v5_"
FUNCTIONS = {
    op: _FN + op
    for op in (
        "register",
        "heartbeat",
        "beat",
        "deregister",
        "sweep",
        "expire",
        "find_best",
        "list",
        "find_all",
        "get",
        "history_append",
        "history_inputs",
        "history_summaries",
    )
}
"""Operation -> function name (function names are global on a server: versioned too)."""
MAX_PAGE = 256
"""Ids one LIST, FIND_ALL or SWEEP call reads at most."""
MAX_QUERY = 16
"""Capabilities one FIND_BEST may ask for."""
MAX_BEATS = 1024
"""Instances one BEAT refreshes at most."""

LOAD_STEP = 0.25
"""Share of its capacity an instance's load must move by before its heartbeat publishes it.

Load only breaks ties between equally scored instances, so a view a quarter of the
capacity out of date routes as well as an exact one; a change of status (busy at
capacity) is published at once.
"""

_LIBRARY = "".join(
    (resources.files(__package__) / name).read_text(encoding="utf-8")
    for name in ("registry.lua", "history.lua")  # one library: a server has its functions or none
)

SOURCE = (
    _LIBRARY.replace("@LIBRARY@", LIBRARY)
    .replace("@FN@", _FN)
    .replace("@MAX_BYTES@", str(MAX_PROFILE_BYTES))
    .replace("@MAX_FIELD@", str(MAX_FIELD_BYTES))
    .replace("@MAX_CAPS@", str(MAX_CAPABILITIES))
    .replace("@MAX_QUERY@", str(MAX_QUERY))
    .replace("@MAX_PAGE@", str(MAX_PAGE))
    .replace("@LOAD_STEP@", repr(LOAD_STEP))
    .replace("@MAX_BEATS@", str(MAX_BEATS))
    .replace("@MAX_INSTANCES@", str(MAX_INSTANCES))
)
"""The library's Lua source, as FUNCTION LOAD takes it."""


def _retired(version: int) -> str:
    """A library of an earlier layout whose every function refuses, naming the upgrade."""
    message = f"ERR the a2a_registry_v{version} functions are retired: upgrade this runtime ({LIBRARY})"
    lines = [
        f"#!lua name=a2a_registry_v{version}",
        f"local function retired() return redis.error_reply('{message}') end",
    ]
    for op in FUNCTIONS:
        flags = ", flags = {'no-writes'}" if op in ("find_best", "list", "find_all", "get") else ""
        lines.append(
            f"redis.register_function{{function_name = 'a2a_v{version}_{op}', callback = retired{flags}}}"
        )
    return "\n".join(lines) + "\n"


RETIRED = (_retired(2), _retired(3), _retired(4))
"""Earlier layouts, loaded over with functions that refuse: they did not check what the roster
grants, so nobody may call them once this one is loaded."""
