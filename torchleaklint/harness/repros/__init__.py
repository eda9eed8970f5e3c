"""One small training or evaluation program per fixable rule, in its leaking form.

Each program defines ``main(steps, device, monitor)``: it runs ``steps`` iterations of its
loop on ``device`` and calls ``monitor.step()`` once at the end of every iteration, then
returns the values it computed (losses, statistics), which must be the same after the fix.
The harness lints the program, applies the real autofix, and measures both versions.
"""
