"""``ragnb llm serve``: a packaged local model served on 127.0.0.1 for the LLM judges."""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_parser"]


def _cmd_llm_serve(args: argparse.Namespace) -> int:
    import signal
    import threading

    from ragnb.llm.server import LocalLLMServer

    server = LocalLLMServer(
        args.model,
        engine=args.engine,
        parallel=args.parallel or None,
        port=args.port,
        n_ctx=args.n_ctx,
        n_threads=args.threads or None,
        weights=args.weights,
    )
    stop = threading.Event()

    def _on_signal(signum: int, frame: object) -> None:
        stop.set()

    previous = {s: signal.signal(s, _on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            server.start()
        except ValueError as e:  # an unknown model name or a missing .gguf file
            print(f"ragnb: error: {e}", file=sys.stderr)
            return 2
        except (ImportError, RuntimeError) as e:
            print(f"ragnb: error: {e}", file=sys.stderr)
            return 1
        print(server.base_url, flush=True)
        print(f"model: {server.model}", flush=True)
        print(
            f"serving {server.model} at {server.base_url} ({server.engine}, {server.slots} "
            f"requests at once, pid {server.pid}, started in {server.startup_s:.1f} s); Ctrl-C "
            "to stop",
            file=sys.stderr,
            flush=True,
        )
        while not stop.wait(0.5):
            if not server.running:
                print(f"ragnb: error: the server exited:\n{server.log_tail()}", file=sys.stderr)
                return 1
        return 0
    finally:
        server.stop()
        for s, handler in previous.items():
            signal.signal(s, handler)


def add_parser(sub: Any) -> None:
    """The ``llm`` subcommands' arguments."""
    p = sub.add_parser("llm", help="a local model server (llama.cpp) for the LLM judges")
    lsub = p.add_subparsers(dest="llm_command", required=True)
    s = lsub.add_parser(
        "serve",
        help="serve a packaged model on 127.0.0.1 (OpenAI API); prints base_url, then the model",
    )
    s.add_argument(
        "--model",
        default="smollm2-135m-instruct",
        help="packaged model name (ragnb.llm.server.local_models) or a .gguf path",
    )
    s.add_argument(
        "--engine",
        choices=["llama-server", "llama-cpp-python"],
        default="llama-server",
        help="llama.cpp's llama-server (default) or llama-cpp-python's server (one request at "
        "a time)",
    )
    s.add_argument(
        "--parallel",
        type=int,
        default=0,
        help="requests llama-server answers at once (default 4)",
    )
    s.add_argument("--port", type=int, default=None, help="port on 127.0.0.1 (default: free)")
    s.add_argument("--n-ctx", type=int, default=2048, help="context size, tokens (default 2048)")
    s.add_argument("--threads", type=int, default=0, help="CPU threads (default: the idle cores)")
    s.add_argument(
        "--weights",
        choices=["f32", "stored"],
        default="f32",
        help="f32 (default): the model's weights dequantised to float32 once and cached, "
        "faster prompts on a CPU; stored: the file as shipped (less memory)",
    )
    s.set_defaults(func=_cmd_llm_serve)
