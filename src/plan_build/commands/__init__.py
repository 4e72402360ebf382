"""The task collection shared by `inv` (tasks.py) and the installed `plan-build` program.

Tasks are thin wrappers: they build a Session and call steps. Each area adds its tasks here.
"""

from __future__ import annotations

from invoke.collection import Collection

from plan_build.commands import checkpoints, dispatch, enhance, release, review, session
from plan_build.commands import setup as setup_tasks
from plan_build.commands import verify as verify_tasks

namespace = Collection()
for _task in session.TASKS:
    namespace.add_task(_task)
namespace.add_task(enhance.enhance)
for _task in verify_tasks.TASKS:
    namespace.add_task(_task)
namespace.add_collection(review.collection)
namespace.add_collection(release.ns)
for _task in dispatch.TASKS:
    namespace.add_task(_task)
for _task in checkpoints.TASKS:
    namespace.add_task(_task)
for _task in setup_tasks.TASKS:
    namespace.add_task(_task)

# No task's stdin is ever forwarded to a child process by invoke.
namespace.configure({"run": {"in_stream": False}})
