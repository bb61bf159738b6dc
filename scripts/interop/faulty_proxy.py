"""A TCP proxy in front of a Socket.IO backend that breaks the link the way networks do.

    faulty_proxy.py --upstream PORT --fault silent|no-handshake|pace [--rate BYTES_PER_S]
                    [--host H] [--port N]

Prints `PORT <n>` once listening, then one line per fault it applied:

    silent        on the first connection that carries a `user_message` (read from the
                  client's masked WebSocket frames), that frame and everything after it, both
                  ways, is dropped and the connection is held open: a link that died silently
                  (no FIN, no RST) just as the client spoke. Later connections pass. SILENT.
    no-handshake  the first connection is accepted and never answered: a proxy that swallows
                  the WebSocket upgrade. Later connections pass. SWALLOWED.
    pace          from the first `user_message` on, the backend's bytes reach the client at
                  --rate bytes per second (default 20,000). PACED.

Everything else passes byte for byte. Standard library only.
"""

import argparse
import asyncio
import signal
import sys


def say(line):
    print(line, flush=True)


class ClientFrames:
    """Reads the client's side of a WebSocket connection (after its HTTP upgrade request) and
    tells whether a text frame starts a Socket.IO `user_message` event."""

    def __init__(self):
        self.buffer = bytearray()
        self.upgraded = False

    def feed(self, data):
        """Returns the offset in `data` where a user_message frame starts, or None."""
        start = len(self.buffer)
        self.buffer += data
        offset = 0
        if not self.upgraded:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return None
            self.upgraded = True
            offset = end + 4
        while True:
            frame = self.parse(offset)
            if frame is None:
                break
            length, payload = frame
            # A Socket.IO EVENT (`42`, maybe `42/namespace,`) named user_message.
            if payload.startswith(b"42") and b'"user_message"' in payload[:64]:
                position = max(0, offset - start)
                del self.buffer[:offset + length]
                return position
            offset += length
        del self.buffer[:offset]
        return None

    def parse(self, offset):
        """(frame length, unmasked payload) of the frame at `offset`, or None if incomplete."""
        data = self.buffer
        if len(data) - offset < 2:
            return None
        second = data[offset + 1]
        length = second & 0x7F
        header = 2
        if length == 126:
            if len(data) - offset < 4:
                return None
            length = int.from_bytes(data[offset + 2:offset + 4], "big")
            header = 4
        elif length == 127:
            if len(data) - offset < 10:
                return None
            length = int.from_bytes(data[offset + 2:offset + 10], "big")
            header = 10
        masked = second & 0x80
        mask = b""
        if masked:
            if len(data) - offset < header + 4:
                return None
            mask = bytes(data[offset + header:offset + header + 4])
            header += 4
        if len(data) - offset < header + length:
            return None
        # Only the start of the payload is needed to recognise the event.
        head = bytes(data[offset + header:offset + header + min(length, 64)])
        if masked:
            head = bytes(b ^ mask[i % 4] for i, b in enumerate(head))
        return header + length, head


class Proxy:
    def __init__(self, args):
        self.args = args
        self.connections = 0
        self.silenced = False
        self.pacing = False

    async def handle(self, client_reader, client_writer):
        self.connections += 1
        number = self.connections
        if self.args.fault == "no-handshake" and number == 1:
            say("SWALLOWED 1")
            try:
                while await client_reader.read(65536):
                    pass
            finally:
                client_writer.close()
            return
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(
                "127.0.0.1", self.args.upstream)
        except OSError:
            client_writer.close()
            return
        state = {"silent": False}
        frames = ClientFrames()

        async def up():
            while True:
                data = await client_reader.read(65536)
                if not data:
                    break
                if state["silent"]:
                    continue
                watching = (self.args.fault == "silent" and not self.silenced) or (
                    self.args.fault == "pace" and not self.pacing)
                at = frames.feed(data) if watching else None
                if at is not None:
                    if self.args.fault == "silent" and not self.silenced:
                        self.silenced = True
                        state["silent"] = True
                        say(f"SILENT {number}")
                        if at > 0:
                            upstream_writer.write(data[:at])
                            await upstream_writer.drain()
                        continue
                    if self.args.fault == "pace" and not self.pacing:
                        self.pacing = True
                        say(f"PACED {number} {self.args.rate}")
                upstream_writer.write(data)
                await upstream_writer.drain()

        async def down():
            while True:
                data = await upstream_reader.read(1024 if self.pacing else 65536)
                if not data:
                    break
                if state["silent"]:
                    continue
                if self.pacing:
                    await asyncio.sleep(len(data) / self.args.rate)
                client_writer.write(data)
                await client_writer.drain()

        tasks = [asyncio.ensure_future(up()), asyncio.ensure_future(down())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            if state["silent"]:
                # Held open: the client must find out by itself that nothing comes.
                await asyncio.gather(*tasks, return_exceptions=True)
        except (ConnectionError, OSError):
            pass
        finally:
            for task in tasks:
                task.cancel()
            for writer in (client_writer, upstream_writer):
                writer.close()


async def run(args):
    proxy = Proxy(args)
    server = await asyncio.start_server(proxy.handle, args.host, args.port)
    say(f"PORT {server.sockets[0].getsockname()[1]}")
    async with server:
        await server.serve_forever()


def main():
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    parser = argparse.ArgumentParser(description="A TCP proxy that breaks the link.")
    parser.add_argument("--upstream", type=int, required=True)
    parser.add_argument("--fault", choices=("silent", "no-handshake", "pace"), required=True)
    parser.add_argument("--rate", type=int, default=20_000)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    try:
        asyncio.run(run(args))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
