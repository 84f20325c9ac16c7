"""NPUGraph updates (torch_npu's aclgraph update): what lets a captured graph take new host
arguments (valid lengths, context lengths) without a new capture.

- :mod:`.task_groups`: task groups of a capture and their updates on another stream,
- :mod:`.external_event`: ``torch.npu.ExternalEvent``, which orders an update before a replay,
- :mod:`.op_handlers` / :mod:`.op_handlers_builtin`: the operator handlers of automatic dispatch
  capture (``torch_npu.npu._npugraph_handlers``),
- :mod:`.dispatch_capture`: ``torch.npu.graph(g, auto_dispatch_capture=True)`` and
  ``NPUGraph.update``,
- :mod:`.update_plan` / :mod:`.update_plan_codegen`: the ACLGraph update plans of compiled code.
"""
