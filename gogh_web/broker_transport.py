"""The embedded broker's transport: kombu's filesystem transport, with each message written whole
before a worker can take it.

kombu's filesystem transport creates a message file under its final name and then writes into
it. A worker that lists the queue in between takes the empty or half-written file and fails to
decode it: the message is lost and the worker's consumer raises. Here a message is written under
a name that matches no queue and renamed into place; a rename within one folder is atomic, so a
worker sees a message whole or not at all.
"""
import os
import uuid
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps

#: Settings name this transport for the embedded broker (Celery's broker_transport).
TRANSPORT = "gogh_web.broker_transport:Transport"


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        """Write the message under a hidden name, then rename it to kombu's `<ms>_<uuid>.<queue>.msg`
        (the names kombu's reader sorts and matches)."""
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = os.path.join(self.data_folder_out, f".partial-{uuid.uuid4()}")
        try:
            with open(partial, "wb") as file:
                file.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as error:
            if os.path.exists(partial):
                os.remove(partial)
            raise ChannelError(f"Cannot add file {final!r} to directory") from error


class Transport(filesystem.Transport):
    Channel = Channel
