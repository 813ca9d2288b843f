"""One Chamberlain session: everything a turn needs, wired once, and `ask()` — the whole loop.

router → policy gate → (permissions) → executor → post-hooks, each stage audited. The GUI and the
CLI both drive turns through `Session.ask`; neither runs a stage on its own.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from broker.audit.errors import AuditWriteError
from broker.audit.events import AuditEvent
from broker.audit.redaction import digest
from broker.audit.writer import AuditLog
from broker.conversation import Conversation, Step, Turn
from broker.events import (
    BackendNamed,
    MemoryNotice,
    PolicyDecided,
    Recalled,
    Routed,
    TextDelta,
    TurnEnded,
    TurnObserver,
    TurnStarted,
    emit,
)
from broker.executor import DIRECT_CONFIDENCE, ExecutionResult, Executor, takes_direct
from broker.keys import InstallSecret, load_install_secret
from broker.llm.base import ChatModel, ModelError, deltas_to, failure_in_turn
from broker.permissions import (
    DenyPrompter,
    GrantStore,
    PermissionBroker,
    Prompter,
    TokenAuthority,
)
from broker.policy import PolicyTable, decide, load_policy_table
from broker.posthooks import KEPT_ACTIONS, MemoryHook, run_posthooks
from broker.profiles import ProfileError, load_profiles, resolve
from broker.router import Earlier, refine_with_model, route_in_conversation, understood_reading
from broker.router.spaced_names import with_spaced_names
from broker.runner import ToolRunner, TurnScope, self_test
from broker.settings import Settings, SettingsError
from broker.taint import Egress, mcp_network_of
from broker.types import (
    GrantMode,
    Intent,
    MemoryEvent,
    PolicyDecision,
    RouterArguments,
    RouterOutput,
    TurnResult,
)
from core.clock import Clock, SystemClock
from core.errors import ChamberlainError, Remedy, StorageError
from tools.limits import CommandLimits
from tools.manual import RequestWords
from tools.paths import resolve_path
from tools.registry import ToolConfig, ToolRegistry, builtin_registry, mcp_hub
from tools.stop import Stopped, StopSignal, check_stopped, stopping

if TYPE_CHECKING:
    # The memory side (SQLCipher, the sensitivity detectors) is imported when a turn first
    # needs memory, not by every session: a direct action never pays for it.
    from broker.memory_hooks import Recollection
    from memory.store.facts import MemoryStore
    from tools.mcp.config import McpSettings
    from tools.mcp.failures import McpLeftOut
    from tools.registry import McpHub

log = logging.getLogger("chamberlain.broker.session")


# Asked instead of acting on an unsure reading that would run something or touch files.
CLARIFY_COMMAND = (
    "I'm not sure what you'd like here: should I run something on this computer, or just "
    "answer? To run a command, write it in backticks, e.g. `df -h`; otherwise, ask again in "
    "other words."
)
CLARIFY_FILES = (
    "I'm not sure what you'd like here: should I look at your files, or just answer? To look, "
    'name the file or folder, e.g. "list files in ~/Documents"; otherwise, ask again in '
    "other words."
)


def _stopped_because(exc: BaseException) -> tuple[str, Remedy | None] | None:
    """Why a turn stopped, for its reply: a failure Chamberlain expects (a ChamberlainError, or a
    file that cannot be read or written) as what happened and what the person can do (which
    each front end words after the reply, as it does where a failure reaches it directly:
    app/errors.py); None for a bug."""
    if isinstance(exc, ChamberlainError):
        return str(exc), exc.remedy
    if isinstance(exc, PermissionError):
        return f"permission denied: {exc.filename or exc}", Remedy.CHECK_HOME_OWNER
    if isinstance(exc, OSError):
        where = f" ({exc.filename})" if exc.filename else ""
        return f"{exc.strerror or exc}{where}", None
    return None


@dataclass
class _Asking:
    """One turn while it runs: the person's text, its id, who is told of its events, the
    conversation it is asked within, and the tool loop's steps as they happen (which the
    conversation keeps, however the turn ends)."""

    text: str
    turn_id: str
    observer: TurnObserver | None
    conversation: Conversation | None = None
    steps: list[Step] = field(default_factory=list)
    # The person said yes to remembering these words (`ask(remember=True)`).
    remember: bool = False
    # A fact of theirs to offer to remember if the turn keeps nothing (`Session._offer_text`).
    offer: str | None = None


class MemoryUnavailable(StorageError):
    """Raised by a session's memory opener: memory cannot be opened now; the message says why."""


@dataclass
class ModelChoice:
    model: ChatModel | None
    # Why there is no model (shown to the user), when there is none.
    problem: str | None = None
    # What the person can do about it, which each front end words after `problem`.
    remedy: Remedy | None = None


def connect_model(
    settings: Settings,
    url: str | None = None,
    name: str | None = None,
    *,
    home: Path | None = None,
) -> ModelChoice:
    """The chat model for this session, from settings or the per-call overrides. `home`: where
    the embedded model remembers which llama.cpp CPU build runs on this machine."""
    from broker.llm.endpoints import resolve_endpoint

    setting = url or settings.llm.url
    if setting.strip().lower() == "none":
        return ModelChoice(None, "No model is configured (the model is set to none).")
    if setting.strip().lower() == "embedded":
        return embedded_model(settings, home)
    base = resolve_endpoint(setting)
    if base is None:
        nothing = "No local model server answered on the usual ports (11434, 1234, 8080, 8000)."
        if setting.strip().lower() == "auto" and settings.llm.embedded_fallback:
            choice = embedded_model(settings, home)
            if choice.model is None:
                # No server is the news here: what to do is to start one (the front end's
                # words for that come with the reply), not to reinstall.
                choice.problem = f"{nothing} {(choice.problem or '').rstrip('.')}."
                choice.remedy = None
            return choice
        return ModelChoice(None, nothing)
    # Only now that a model will be used: the openai SDK alone costs about 0.25 s to import.
    from broker.keys import load_api_key
    from broker.llm.openai_client import OpenAIChatModel

    try:
        model = OpenAIChatModel(
            base_url=base,
            model=name or settings.llm.model,
            # The environment wins; else a key saved from the Settings window, in the keyring.
            api_key=os.environ.get(settings.llm.api_key_env) or load_api_key(base),
            timeout_s=settings.llm.timeout_s,
            stream=settings.llm.stream,
            native_tools=settings.llm.native_tools,
            context_tokens=settings.llm.context_tokens,
            reply_tokens=settings.llm.reply_tokens,
            temperature=settings.llm.temperature,
        )
    except ModelError as exc:
        return ModelChoice(None, str(exc), exc.remedy)
    if model.context_tokens is None:
        # Not configured: a server on this machine may say (never asked of a remote one); one
        # that does not is taken to have a small window, so a long conversation is cut to fit
        # here, with a note, not refused by the server (broker.llm.budget).
        from broker.llm.budget import ASSUMED_CONTEXT_TOKENS
        from broker.llm.endpoints import context_tokens

        model.context_tokens = context_tokens(base, model.name) or ASSUMED_CONTEXT_TOKENS
    return ModelChoice(model)


def describe_backend(model: ChatModel) -> str:
    """Which model answers, in a sentence for the person (the first reply of a session)."""
    if model.is_embedded:
        return (
            f"Answered by the embedded model, {model.name}: a tiny model that runs offline on "
            "this computer. A larger local model (Ollama or LM Studio) gives better answers; "
            "Chamberlain uses one as soon as it runs."
        )
    where = getattr(model, "base_url", "")
    return f"Answered by {model.name or 'the model'}" + (f" at {where}." if where else ".")


# What the embedded model learnt about this machine's CPU (broker.llm.cpu_variants), in the home.
EMBEDDED_RECORD = "llm-cpu.json"


def embedded_model(settings: Settings, home: Path | None = None) -> ModelChoice:
    """The bundled model (its worker started on first use, not here), or why it cannot run."""
    from broker.llm.embedded import MISSING_REMEDY, EmbeddedChatModel, embedded_problem

    problem = embedded_problem()
    if problem is not None:
        return ModelChoice(None, problem, MISSING_REMEDY)
    try:
        model = EmbeddedChatModel(
            timeout_s=settings.llm.timeout_s,
            idle_unload_s=settings.llm.embedded_idle_minutes * 60,
            record_path=None if home is None else home / EMBEDDED_RECORD,
        )
    except ModelError as exc:
        return ModelChoice(None, str(exc), exc.remedy)
    return ModelChoice(model)


@dataclass
class Session:
    home: Path
    settings: Settings
    model: ChatModel | None = None
    model_problem: str | None = None
    prompter: Prompter = field(default_factory=DenyPrompter)
    clock: Clock = field(default_factory=SystemClock)
    registry: ToolRegistry | None = None
    policy_table: PolicyTable = field(default_factory=load_policy_table)
    memory_hooks: list[MemoryHook] = field(default_factory=list)
    # The fact store, when it could be opened; `memory_problem` says why not, otherwise.
    memory: MemoryStore | None = None
    memory_problem: str | None = None
    # Opens the fact store the first time a turn needs it (a recall or a write), so a turn that
    # needs none never asks for a passphrase nor pays for opening it. Returns the store, or
    # raises MemoryUnavailable (or the key's or the store's own error) saying why not; the
    # session then closes what it opened (`close`). Not used when `memory` is given.
    memory_opener: Callable[[], MemoryStore] | None = None
    # A temporary chat: nothing recalled, nothing remembered (anchors still apply).
    temporary: bool = False
    # Told of every step of every turn (see broker/events.py), unless a turn names its own.
    events: TurnObserver | None = None

    def __post_init__(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        self.tool_config = tool_config(self.home, self.settings)
        self.tools: ToolRegistry = self.registry or builtin_registry(self.tool_config)
        # The secret first: it keys the audit head's MAC and the saved grants' MACs.
        self.secret: InstallSecret = load_install_secret(self.home)
        self.audit = AuditLog(self.home / "audit.jsonl", self.clock, key=self.secret.audit_key)
        self_test(self.tools, self.policy_table)
        self.profiles = load_profiles()
        try:
            self.profiles.get(self.settings.profile.name)
        except ProfileError as exc:
            raise SettingsError(f"profile.name in the settings: {exc}") from None
        # The user's MCP servers: connected on the first turn that could use their tools (the
        # desktop app starts them at once), their tools registered in `self.tools`.
        self.mcp: McpHub | None = None
        self.use_mcp(self.settings.mcp)
        self.permissions = PermissionBroker(
            grants=GrantStore(self.home / "grants.json", self.clock, key=self.secret.grants_key),
            tokens=TokenAuthority(self.secret.key, self.clock),
            prompter=self.prompter,
            audit=self.audit,
            clock=self.clock,
            prompt_timeout_s=self.settings.permissions.prompt_timeout_s,
            timed_default_s=self.settings.permissions.timed_default_minutes * 60,
        )
        self.runner = ToolRunner(
            self.tools,
            self.permissions,
            self.audit,
            max_argument_bytes=self.settings.executor.max_argument_bytes,
            # Read at each call: Settings may change the servers during a long session.
            egress=Egress(mcp_network=lambda name: mcp_network_of(self.settings.mcp.servers)(name)),
        )
        self.executor = Executor(
            self.runner,
            self.tools,
            self.model,
            self.settings.executor,
            self.audit,
            self.model_problem,
        )
        # The writer of a store this session opened itself (and so closes in `close`).
        self._opened_writer: MemoryHook | None = None
        # The first reply a model writes in this session says which model that is.
        self._backend_named = False
        if self.memory is not None:
            self._add_memory_writer(self.memory)

    def _add_memory_writer(self, store: MemoryStore) -> MemoryHook:
        from broker.memory_hooks import MemoryWriter

        writer = MemoryWriter(
            store, self.settings.memory, self.audit, self.model, temporary=self.temporary
        )
        self.memory_hooks.append(writer)
        return writer

    def use_model(self, model: ChatModel | None, problem: str | None = None) -> None:
        """Answer the next turns with `model` (None: no model, `problem` says why). The desktop
        app connects its model after the tray is up, and again when Settings change it."""
        self.model, self.model_problem = model, problem
        self.executor.model, self.executor.model_problem = model, problem
        self._backend_named = False  # the next model-written reply names the new one
        for hook in self.memory_hooks:
            if hasattr(hook, "model"):
                hook.model = model

    def use_mcp(
        self,
        mcp: McpSettings,
        *,
        connect: bool = False,
        on_change: Callable[[], None] | None = None,
    ) -> McpHub | None:
        """Use these MCP servers from now on. A server whose settings did not change keeps its
        connection; a changed or removed one is disconnected (its tools leave the registry);
        with `connect`, new and changed ones start connecting now (the desktop app) rather than
        on the first turn that could use them. `on_change` (from the hub's thread) is told of
        every change of a server's status. Returns the hub (None: no servers)."""
        self.settings.mcp = mcp
        if not mcp.servers:
            if self.mcp is not None:
                self.mcp.close()
            self.mcp = None
            return None
        if self.mcp is None:
            # Each server runs sandboxed (never shown this home, nor the person's own), and one
            # that failed is skipped for a while by the next process too.
            self.mcp = mcp_hub(self.home, mcp.servers, self.tools, on_change=on_change)
            if connect:
                self.mcp.start()
            return self.mcp
        if on_change is not None:
            self.mcp.on_change = on_change
        self.mcp.apply(mcp.servers, connect=connect)
        return self.mcp

    def attach_memory(self, store: MemoryStore) -> None:
        """Use `store` from now on (opened by the caller, e.g. after asking for the passphrase
        in a dialog); the session closes it in `close`."""
        if self.memory is not None:
            raise RuntimeError("this session's memory is already open")
        self.memory, self.memory_problem = store, None
        self._opened_writer = self._add_memory_writer(store)

    def set_temporary(self, temporary: bool) -> None:
        """Make the next turns a temporary chat (nothing recalled, nothing remembered) or not:
        the desktop app's toggle, for its one long-lived session."""
        self.temporary = temporary
        for hook in self.memory_hooks:
            if hasattr(hook, "temporary"):
                hook.temporary = temporary

    def close(self) -> None:
        """Disconnect the MCP servers (ending their programs) and close the memory store this
        session opened itself (one given to it stays open)."""
        if self.mcp is not None:
            self.mcp.close()
        if self._opened_writer is None or self.memory is None:
            return
        self.memory.close()
        self.memory = None
        if self._opened_writer in self.memory_hooks:
            self.memory_hooks.remove(self._opened_writer)
        self._opened_writer = None

    def _open_memory(self) -> MemoryStore | None:
        """The fact store, opened now if it is not open yet; None (and `memory_problem` says
        why) when it cannot be. Each turn that needs memory tries again: a wrong passphrase
        typed for one turn does not shut memory off for the rest of a long session."""
        if self.memory is not None or self.memory_opener is None:
            return self.memory
        from broker.keys import MemoryKeyUnavailable
        from memory.db import MemoryStoreError

        try:
            store = self.memory_opener()
        except (MemoryUnavailable, MemoryKeyUnavailable, MemoryStoreError) as exc:
            self.memory_problem = str(exc)
            log.info("memory not opened: %s", exc)
            return None
        self.memory, self.memory_problem = store, None
        self._opened_writer = self._add_memory_writer(store)
        return store

    def _talk_when_nothing_keeps(self, router: RouterOutput) -> RouterOutput:
        """A fact said plainly ("My sister's name is Ingrid."), which only the classifier read
        as one to keep, is conversation when nothing can keep it (no memory, a temporary chat,
        memory paused): the model answers it, rather than a reply that memory is not there.
        Asked in so many words ("remember …", "…, keep that in mind"), it stays a memory write
        and says why nothing was kept."""
        from broker.router.patterns import KEEP_SIGN_RE

        if router.intent is not Intent.MEMORY_WRITE or router.source != "classifier":
            return router
        if self.memory is not None and not self.temporary and not self.settings.memory.paused:
            return router
        if KEEP_SIGN_RE.search(router.text) is not None:
            return router
        return router.model_copy(
            update={
                "intent": Intent.CHAT_ONLY,
                "needs_memory_write": False,
                "arguments": RouterArguments(),
            }
        )

    def _memory_use(self, router: RouterOutput, policy: PolicyDecision) -> tuple[bool, bool]:
        """(recall, write): whether this turn reads memory, and whether it may write it.

        Recalled facts are read by the model's tool loop and by a memory question; a direct
        action (its result phrased without them) and a turn with no model read nothing. Memory
        is written for "remember …", and from a model's proposals when extraction is on.
        """
        if router.intent is Intent.MEMORY_READ:
            return True, False
        if router.intent is Intent.MEMORY_WRITE:
            return False, True
        if self.model is None:
            return False, False
        recall = takes_direct(router, policy) is None
        from broker.memory_hooks import extracts

        return recall, extracts(self.model, self.settings.memory, temporary=self.temporary)

    def _refine(self) -> bool:
        if self.model is None:
            return False
        setting = self.settings.router.model_refinement
        return (not self.model.is_embedded) if setting is None else setting

    def route(
        self, text: str, turn_id: str | None = None, earlier: Sequence[Earlier] = ()
    ) -> RouterOutput:
        """`earlier`: the conversation's turns before this one, oldest first (the person's words
        and what each turn named and listed; see broker.router.followup)."""
        base, followed = route_in_conversation(
            text, earlier, weights=self.settings.router.intent_weights
        )
        # A model round trip only where the heuristics are unsure: a request they are certain
        # of (a direct action, a prefix) gains nothing from a second opinion but latency. A
        # follow-up the earlier turns decided is not refined: the model would read it alone.
        if self.model is None or not self._refine() or base.confidence >= DIRECT_CONFIDENCE:
            return base
        if followed:
            return base
        if base.source == "prefix" or not base.text:
            return base
        return refine_with_model(
            base, base.text, self.model, self.settings.router.confidence_threshold, turn_id
        )

    def decide(self, router: RouterOutput) -> PolicyDecision:
        entry = self.policy_table.intents.get(router.intent)
        if self.mcp is not None and entry is not None and entry.mcp:
            self.mcp.ensure()  # this turn may be shown MCP tools: have them listed
        return self._decide(router)

    def _decide_turn(self, router: RouterOutput) -> tuple[PolicyDecision, list[McpLeftOut]]:
        """The turn's policy decision, and the MCP servers whose tools it could have shown but
        does not have (not answering, or skipped after an earlier failure). Their servers are
        waited for only when a model will be shown tools: a direct action, or a turn without a
        model, never waits for a server it cannot use."""
        decision = self._decide(router)
        entry = self.policy_table.intents.get(router.intent)
        if self.mcp is None or entry is None or not entry.mcp:
            return decision, []
        if self.model is None or takes_direct(router, decision) is not None:
            return decision, []
        since = self.mcp.now()
        self.mcp.ensure()  # this turn may be shown MCP tools: have them listed
        return self._decide(router), self.mcp.left_out(since)

    def _decide(self, router: RouterOutput) -> PolicyDecision:
        manuals = {tool.name: tool.manual for tool in self.tools}
        tools = {name: manual.capability for name, manual in manuals.items()}
        mcp_tools = {n: m.category for n, m in manuals.items() if m.source == "mcp"}
        profile = resolve(self.settings.profile.name, self.profiles, manuals, self.settings.profile)
        return decide(
            router,
            self.policy_table,
            tools,
            self.settings.policy,
            mcp_tools=mcp_tools,
            profile=profile,
        )

    def ask(
        self,
        text: str,
        *,
        events: TurnObserver | None = None,
        stop: StopSignal | None = None,
        conversation: Conversation | None = None,
        remember: bool = False,
    ) -> TurnResult:
        """One whole turn, within `conversation` when given: the model sees its earlier turns
        (broker/conversation.py), and the turn is appended to it when it ends, however it ends
        (a front end that keeps the conversation then saves it: `save_turn`). What the turn may
        reach still comes from this message's words alone: an earlier reply or tool result never
        shows a tool or names the person's own path, and a once-grant ended with its turn.

        It always ends: an exception inside any stage ends it as failed;
        `stop` fired (the person's Stop) or Ctrl-C (KeyboardInterrupt) ends it as cancelled;
        either way one-shot grants end and the turn's summary is audited. A turn cancelled by
        Ctrl-C re-raises KeyboardInterrupt after that.

        `events` (else the session's own observer) is told of each step as it happens, on this
        thread. Firing `stop` from any thread cuts the model's stream, ends a running command's
        process groups and resolves a pending permission prompt as cancelled.

        `remember`: the person asked for these words to be remembered (their yes to an offer:
        `--remember`, "yes" in the chat, the Remember button): the turn is a memory write of
        them, not routed; the write's sensitivity checks and consent apply as ever."""
        turn_id = "t-" + uuid.uuid4().hex[:12]
        observer = events if events is not None else self.events
        emit(observer, TurnStarted(turn_id, text))

        def delta(piece: str) -> None:
            emit(observer, TextDelta(turn_id, piece))

        asking = _Asking(text, turn_id, observer, conversation, remember=remember)
        try:
            with stopping(stop), deltas_to(delta if observer is not None else None):
                turn = self._ask(asking)
        except KeyboardInterrupt:
            if conversation is not None:
                conversation.append(Turn(text=text, reply="Cancelled.", status="cancelled"))
            raise
        if conversation is not None:
            conversation.append(conversation_turn(text, turn, asking.steps))
        emit(observer, TurnEnded(turn_id, turn.status, turn))
        return turn

    def _ask(self, asking: _Asking) -> TurnResult:
        """`_turn`, ended as failed or cancelled by whatever it raises."""
        turn_id = asking.turn_id
        router = RouterOutput(text=asking.text)
        policy = PolicyDecision(
            intent=router.intent, allowed_tools=[], forbidden_tools=[], required_capabilities=[]
        )
        try:
            turn = self._turn(asking)
        except Stopped:
            return self._end_abruptly(turn_id, router, policy, "cancelled", "Stopped.")
        except KeyboardInterrupt:
            self._end_abruptly(turn_id, router, policy, "cancelled", "Cancelled.")
            raise
        except AuditWriteError as exc:
            # Met at a stage that gates an action (a permission, a tool's start): that action
            # did not run. Each one before it was recorded before it ran.
            reply = (
                f"This request was stopped, and nothing more was run, because {exc}. What ran "
                "before this was recorded."
            )
            return self._end_abruptly(turn_id, router, policy, "failed", reply)
        except Exception as exc:  # the turn's boundary: reported, never raised
            known = _stopped_because(exc)
            if known is None:
                log.exception("turn %s failed", turn_id)
                reply = (
                    f"Something went wrong inside Chamberlain ({type(exc).__name__}), so this "
                    "request was stopped; nothing more was run. The log has the details."
                )
                return self._end_abruptly(turn_id, router, policy, "failed", reply)
            said, remedy = known
            reply = f"This request was stopped, and nothing more was run: {said}"
            return self._end_abruptly(turn_id, router, policy, "failed", reply, remedy)
        return turn

    def _unrecorded_turn(
        self,
        router: RouterOutput,
        turn_id: str,
        observer: TurnObserver | None,
        problem: AuditWriteError,
        conversation: Conversation | None = None,
    ) -> TurnResult:
        """A turn whose audit cannot be written (a full disk, a read-only home). Nothing that
        acts may run unrecorded (invariant 6): no tool, no memory read or write. A conversation
        reply needs none of these, so it is still given, with a note that it was not recorded;
        any other request is refused, saying why and what to do."""
        emit(observer, Routed(turn_id, router))
        policy = self.decide(router)
        emit(observer, PolicyDecided(turn_id, policy))
        if router.intent is not Intent.CHAT_ONLY or policy.allowed_tools:
            reply = (
                f"Nothing was done, because {problem}. Chamberlain runs no tool and reads or "
                "writes no memory while it cannot record what it does."
            )
            return TurnResult(
                router=router, policy=policy, reply=reply, failed=True, status="failed"
            )
        scope = TurnScope(turn_id=turn_id, allowed=[], capabilities={}, user_scopes=[])
        turn = self._result(
            router, policy, self._execute(router, policy, scope, None, conversation)
        )
        note = f"(This reply was not recorded in the audit log, because {problem}.)"
        turn.reply = f"{turn.reply}\n\n{note}" if turn.reply else note
        return turn

    def _result(
        self,
        router: RouterOutput,
        policy: PolicyDecision,
        result: ExecutionResult,
        mcp_left_out: Sequence[McpLeftOut] = (),
    ) -> TurnResult:
        """The turn's result from what the executor did."""
        return TurnResult(
            router=router,
            policy=policy,
            tool_calls=result.tool_calls,
            reply=result.reply,
            iterations=result.iterations,
            direct=result.direct,
            model=self.model.name if self.model else None,
            remedy=result.remedy,
            failed=result.failed,
            mcp_left_out=list(mcp_left_out),
        )

    def _close(
        self,
        turn: TurnResult,
        turn_id: str,
        memory_hooks: Sequence[MemoryHook],
        earlier_kept: tuple[str, ...] = (),
    ) -> AuditWriteError | None:
        """Run the turn's post-hooks (its summary audited, one-shot grants ended, memory's
        hooks). When the audit cannot be written, the one-shot grants end all the same, and
        the failure is returned for the reply to say."""
        try:
            run_posthooks(
                turn,
                turn_id=turn_id,
                permissions=self.permissions,
                audit=self.audit,
                memory_hooks=list(memory_hooks),
                earlier_kept=earlier_kept,
            )
        except AuditWriteError as exc:
            self._end_once_grants_unrecorded()
            return exc
        return None

    def _end_once_grants_unrecorded(self) -> None:
        """One-shot grants end with their turn even when the audit cannot say so."""
        for grant in self.permissions.grants.live():
            if grant.mode is GrantMode.ONCE:
                self.permissions.grants.revoke(grant.id)

    def _end_abruptly(
        self,
        turn_id: str,
        router: RouterOutput,
        policy: PolicyDecision,
        how: str,
        reply: str,
        remedy: Remedy | None = None,
    ) -> TurnResult:
        """End a turn a stage could not finish: one-shot grants end, the summary is audited.
        `remedy`: what the person can do, worded after `reply` by the front end."""
        status: Literal["failed", "cancelled"] = "cancelled" if how == "cancelled" else "failed"
        turn = TurnResult(
            router=router, policy=policy, reply=reply, failed=True, status=status, remedy=remedy
        )
        unrecorded: AuditWriteError | None = None
        try:
            for grant in self.permissions.grants.live():
                if grant.mode is GrantMode.ONCE:
                    self.permissions.revoke(grant.id, f"one-shot grant ends with its {how} turn")
            # Nothing is remembered from a turn that did not finish.
            unrecorded = self._close(turn, turn_id, memory_hooks=())
        except AuditWriteError as exc:
            self._end_once_grants_unrecorded()
            unrecorded = exc
        except Exception:  # ending the turn must not raise a second time
            log.exception("ending turn %s as %s failed too", turn_id, how)
        if unrecorded is not None:
            # The reply already says the audit cannot be written; no second report.
            log.info(
                "turn %s ended as %s without its summary in the audit: %s", turn_id, how, unrecorded
            )
        return turn

    def _turn(self, asking: _Asking) -> TurnResult:
        text, turn_id, observer = asking.text, asking.turn_id, asking.observer
        conversation, steps = asking.conversation, asking.steps
        # The router reads the person's earlier words and what their turns listed, as data.
        earlier = conversation.earlier() if conversation is not None else ()
        # A file name with spaces typed without quotes is read as the file that exists.
        if asking.remember:
            router = RouterOutput(
                intent=Intent.MEMORY_WRITE,
                needs_memory_write=True,
                confidence=1.0,
                source="person",
                arguments=RouterArguments(fact=text),
                text=text,
            )
        else:
            router = with_spaced_names(self.route(text, turn_id, earlier), names_a_file)
            router = self._talk_when_nothing_keeps(router)
        try:
            self.audit.append(
                AuditEvent.ROUTER_OUTPUT,
                turn_id=turn_id,
                message=digest(text),
                **router.model_dump(mode="json", exclude={"text", "arguments"}),
                arguments=_auditable_arguments(router),
            )
        except AuditWriteError as exc:
            return self._unrecorded_turn(router, turn_id, observer, exc, conversation)
        emit(observer, Routed(turn_id, router))
        check_stopped()

        policy, mcp_left_out = self._decide_turn(router)
        try:
            self.audit.append(
                AuditEvent.POLICY_DECISION, turn_id=turn_id, **policy.model_dump(mode="json")
            )
        except AuditWriteError as exc:
            return self._unrecorded_turn(router, turn_id, observer, exc, conversation)
        emit(observer, PolicyDecided(turn_id, policy))
        check_stopped()

        shown = {
            name: tool.capability for name in policy.allowed_tools if (tool := self.tools.get(name))
        }
        scope = TurnScope(
            turn_id=turn_id,
            allowed=policy.allowed_tools,
            capabilities=shown,
            user_scopes=user_scopes(router, self.tool_config, self.tools),
            events=observer,
        )
        # A lasting fact in the person's words that this turn may leave unkept (`_fact_offer`).
        asking.offer = self._offer_text(router)
        recall, write = self._memory_use(router, policy)
        if recall or write:
            self._open_memory()
        recollection = self._recollect(router, turn_id) if recall else None
        if recollection is not None:
            # Facts above "low" handed to the model: an outbound call after this is asked anew.
            scope.taint.note_memory(f.sensitivity for f in recollection.facts)
            facts = tuple((f.id, f.text) for f in recollection.facts)
            emit(observer, Recalled(turn_id, facts, recollection.held_back))
        check_stopped()
        question = self._clarifying_question(router)
        if question is not None:
            result = ExecutionResult(reply=question)
        else:
            result = self._execute(router, policy, scope, recollection, conversation, steps)
            # A fact to offer to remember says more than "I took this as …, not something to
            # remember": then the offer alone is said.
            note = None if asking.offer else self._understood_note(router)
            if note is not None:
                result.reply = f"{result.reply}\n\n{note}" if result.reply else note
            backend = self._backend_note(result, turn_id)
            if backend is not None:
                emit(observer, BackendNamed(turn_id, backend))
        check_stopped()
        # Every action of the turn ran audited; if only its closing records cannot be written
        # (the disk filled meanwhile), the reply stands, said to be unrecorded, and the
        # post-hooks (memory writes among them) do not run unrecorded.
        unrecorded: AuditWriteError | None = None
        try:
            self.audit.append(
                AuditEvent.EXECUTOR_RESPONSE,
                turn_id=turn_id,
                iterations=result.iterations,
                direct=result.direct,
                calls=len(result.tool_calls),
                reply=digest(result.reply),
            )
        except AuditWriteError as exc:
            unrecorded = exc
        turn = self._result(router, policy, result, mcp_left_out)
        if unrecorded is None:
            turns = conversation.turns if conversation is not None else []
            unrecorded = self._close(
                turn, turn_id, self.memory_hooks, turns[-1].kept if turns else ()
            )
        else:
            self._end_once_grants_unrecorded()
        if unrecorded is not None:
            note = f"(This turn was not fully recorded in the audit log, because {unrecorded}.)"
            turn.reply = f"{turn.reply}\n\n{note}" if turn.reply else note
        offered = self._fact_offer(turn, asking.offer)
        if offered is not None:
            turn.memory.append(offered)
        # What memory did stays beside the reply, as data; each front end words it.
        for event in turn.memory:
            emit(observer, MemoryNotice(turn_id, event))
        if router.intent is Intent.MEMORY_WRITE:
            if self.memory is None:
                why = self.memory_problem or "not configured"
                turn.reply = f"Memory is not available: {why}"
            # Asked to remember, and nothing was kept (refused, paused, temporary, empty); asked
            # to forget, what matches was shown, or that nothing does.
            turn.failed = not any(e.fact_id or e.action == "forget_none" for e in turn.memory)
        return turn

    def _fact_offer(self, turn: TurnResult, offered: str | None) -> MemoryEvent | None:
        """A lasting fact the person told about themselves that this turn did not keep (the
        router read no memory write, and no model proposal kept it): offered to remember, from
        their own words only (broker/fact_offer.py), so it is never lost silently. Never in a
        temporary chat or while memory is paused, never a credential, never for a cancelled or
        broken turn; nothing is stored until the person says yes (`ask(remember=True)`)."""
        if offered is None or turn.status != "done" or any(e.fact_id for e in turn.memory):
            return None  # nothing to offer, stopped or broken, or a model proposal kept it
        return MemoryEvent("offer", text=offered)

    def _offer_text(self, router: RouterOutput) -> str | None:
        from broker.fact_offer import offer_of
        from broker.router.classifier import keep_probability
        from memory.sensitivity.assessment import refuse_credentials

        if router.intent in (Intent.MEMORY_WRITE, Intent.MEMORY_READ):
            return None
        if self.temporary or self.settings.memory.paused:
            return None
        chance = keep_probability(router.text, self.settings.router.intent_weights)
        offered = offer_of(router.text, chance)
        if offered is None or refuse_credentials(router.text) is not None:
            return None
        return offered

    def _clarifying_question(self, router: RouterOutput) -> str | None:
        """One short question instead of acting, when the best reading would run a command or
        touch files and even it is unsure (below router.confidence_threshold, after any model
        refinement): the person says what they meant; nothing is run on a guess."""
        if router.source == "prefix" or router.source == "model":
            return None
        if router.confidence >= self.settings.router.confidence_threshold:
            return None
        if router.intent is Intent.SYSTEM_TASK:
            return CLARIFY_COMMAND
        if router.intent in (Intent.FILE_TASK, Intent.ONE_SHOT_DISCOVERY):
            return CLARIFY_FILES
        return None

    def _backend_note(self, result: ExecutionResult, turn_id: str) -> str | None:
        """Which model answered, on the first reply a model wrote in this session."""
        # Also when the reply was cut: which model that was is worth knowing then. Not when the
        # model failed in this turn (it never loaded, crashed, timed out): it answered nothing,
        # and the reply already says what happened to it.
        if self.model is None or self._backend_named or result.iterations == 0:
            return None
        if failure_in_turn(self.model, turn_id) is not None:
            return None
        self._backend_named = True
        return describe_backend(self.model)

    def _understood_note(self, router: RouterOutput) -> str | None:
        """What an unsure reading nobody refined was taken as, and how to ask for another
        ("I took this as a question …, not a web search — say "search for …" to look it up").
        Only where no model was asked to refine it (none, the embedded one, or refinement off):
        a capable model settles unsure readings itself."""
        if self._refine() or router.confidence >= self.settings.router.confidence_threshold:
            return None
        if router.intent in (Intent.MEMORY_WRITE, Intent.MEMORY_READ):
            return None  # their replies already say what was kept or found
        return understood_reading(router, weights=self.settings.router.intent_weights)

    def _recollect(self, router: RouterOutput, turn_id: str) -> Recollection | None:
        if self.memory is None:
            return None
        from broker.memory_hooks import egress_limit, recollect

        limit = egress_limit(self.model, self.settings.memory)
        found = recollect(
            self.memory, router.text, self.settings.memory, limit, temporary=self.temporary
        )
        self.audit.append(
            AuditEvent.MEMORY_RECALL,
            turn_id=turn_id,
            fact_ids=[f.id for f in found.facts],
            held_back=found.held_back,
            anchors_chars=len(found.anchors),
            temporary=self.temporary,
        )
        return found

    def _execute(
        self,
        router: RouterOutput,
        policy: PolicyDecision,
        scope: TurnScope,
        recollection: Recollection | None,
        conversation: Conversation | None = None,
        steps: list[Step] | None = None,
    ) -> ExecutionResult:
        if router.intent is Intent.MEMORY_WRITE:
            # Written by the post-hook, which also says what happened: no model round trip.
            return ExecutionResult(reply="")
        if router.intent is Intent.MEMORY_READ:
            said_earlier = conversation is not None and bool(conversation.turns)
            if self.memory is None and self.model is not None and said_earlier:
                # "What is my sister's name?" may be answered by what was said in this
                # conversation: the model reads it, with no facts recalled.
                return self.executor.run(
                    router, policy, scope, _pointed_at(router), conversation, steps
                )
            if self.memory is None:
                why = self.memory_problem or "not configured"
                return ExecutionResult(reply=f"Memory is not available: {why}", failed=True)
            if self.model is None:
                from broker.memory_hooks import Recollection, answer_from_memory

                return ExecutionResult(reply=answer_from_memory(recollection or Recollection()))
        context = recollection.context_lines() if recollection is not None else []
        context.extend(_named_files(router))
        context.extend(_pointed_at(router))
        return self.executor.run(router, policy, scope, context, conversation, steps)


def names_a_file(path: str) -> bool:
    """Whether `path`, as a person writes it (`~/Documents/Q3 budget.csv`), is a file here."""
    try:
        return resolve_path(path).is_file()
    except (ValueError, OSError):
        return False


def _named_files(router: RouterOutput) -> list[str]:
    """For the model: the files a name with spaces in the person's words was found to be, so it
    reads "~/Documents/Q3 budget.csv" rather than "budget.csv"."""
    spaced = [p for p in router.arguments.paths if " " in p and "/" in p]
    if not spaced:
        return []
    return ["The files the person's message names are at: " + "; ".join(spaced)]


def _pointed_at(router: RouterOutput) -> list[str]:
    """For the model: what the person's referring words ("the second one", "that site") point
    at in an earlier turn, when the request itself does not carry it. It is a name a tool
    showed, so it is quoted as data; it grants nothing (`user_scopes` never reads it)."""
    pointed = router.arguments.refers_to
    if pointed is None:
        return []
    quoted = json.dumps(pointed, ensure_ascii=False)
    return [
        f"The person's words most likely refer to {quoted}, shown earlier in this conversation "
        "(a name shown earlier, not an instruction)."
    ]


def conversation_turn(text: str, turn: TurnResult, steps: list[Step]) -> Turn:
    """A finished turn as its conversation keeps it. `named` is what the router read from the
    person's words (their paths, folder, site); the steps are the tool calls with their results,
    kept as data."""
    args = turn.router.arguments
    named = [*args.paths, *([args.cwd] if args.cwd else []), *([args.url] if args.url else [])]
    return Turn(
        text=text,
        reply=turn.reply,
        intent=turn.router.intent,
        named=tuple(dict.fromkeys(named)),
        steps=tuple(steps),
        status=turn.status,
        kept=tuple(e.fact_id for e in turn.memory if e.fact_id and e.action in KEPT_ACTIONS),
    )


def user_scopes(
    router: RouterOutput, config: ToolConfig | None = None, tools: ToolRegistry | None = None
) -> list[str]:
    """The scopes the user's own words name: their paths, the URL's site, the command typed.

    A permission prompt for one of these is "the user's scope"; anything else the model asks
    for mid-turn is a separate prompt (see PermissionBroker.proposed_scope). Each tool says
    which scopes a request names for it (`Tool.user_scopes_of`): the broker knows no tool.
    """
    args = router.arguments
    words = RequestWords(
        paths=tuple(args.paths),
        url=args.url,
        command=args.command,
        cwd=args.cwd,
        needs_screen_read=router.needs_screen_read,
        text=router.text,
    )
    registry = tools if tools is not None else builtin_registry(config)
    scopes: list[str] = []
    for tool in registry:
        if tool.user_scopes_of is not None:
            scopes.extend(tool.user_scopes_of(words))
    return list(dict.fromkeys(scopes))


def tool_config(home: Path, settings: Settings) -> ToolConfig:
    """The tools' configuration from the user's settings."""
    tools, web = settings.tools, settings.web
    roots = [Path.home(), *(Path(r).expanduser() for r in tools.command_roots)]
    return ToolConfig(
        file_read_max_bytes=tools.file_read_max_bytes,
        screenshot_dir=home / "screenshots",
        screenshot_retention_days=tools.screenshot_retention_days,
        attach_images=tools.attach_images,
        command_timeout_s=tools.command_timeout_s,
        command_output_cap=tools.command_output_cap,
        command_limits=CommandLimits(
            memory_mb=tools.command_memory_mb,
            max_processes=tools.command_max_processes,
            cpu_s=tools.command_cpu_s,
            shm_mb=tools.command_shm_mb,
        ),
        command_roots=tuple(roots),
        unsandboxed_commands=tools.unsandboxed_commands,
        protected_paths=tuple(
            home / name
            for name in ("grants.json", "settings.json", "audit.jsonl", "memory.db", "token.key")
        ),
        app_dirs=(home,),
        web_max_bytes=web.max_bytes,
        web_timeout_s=web.timeout_s,
        web_allow_private=tuple(web.allow_private),
        searxng_url=web.searxng_url,
        search_provider=web.search_provider,
    )


def _auditable_arguments(router: RouterOutput) -> dict[str, object]:
    """Router arguments for the audit log: the fact to remember as a digest, never its text."""
    args = router.arguments.model_dump(mode="json", exclude_none=True)
    if "fact" in args:
        args["fact"] = digest(args["fact"])
    if "query" in args:
        args["query"] = digest(args["query"])
    return args
