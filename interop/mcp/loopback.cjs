// Preload for the MCP reference server: `node --require loopback.cjs …`.
//
// server-everything's HTTP modes call app.listen(PORT) with no host, so they
// listen on every interface (issue 11). This wraps net.Server.prototype.listen
// (http.Server inherits it) so that every TCP listen in the process binds
// 127.0.0.1 instead, whatever host it asked for, and says where it listens on
// stderr once it does:
//
//	loopback: listening on 127.0.0.1:PORT
//
// With PORT=0 the kernel picks a free port, and internal/everything reads it
// from that line: no port is chosen by one process and bound by another.
// Unix sockets and inherited handles are left alone: they are not TCP.
"use strict";

const net = require("node:net");

const HOST = "127.0.0.1";
const listen = net.Server.prototype.listen;

// isPort reports whether v is a TCP port as listen takes it: a number, or a
// string of digits (PORT from the environment arrives as a string).
function isPort(v) {
	return typeof v === "number" || (typeof v === "string" && /^[0-9]+$/.test(v));
}

net.Server.prototype.listen = function (...args) {
	const cb = typeof args[args.length - 1] === "function" ? args.pop() : undefined;
	let options;
	if (args.length === 0 || args[0] === undefined || args[0] === null || isPort(args[0])) {
		// listen([port[, host[, backlog]]]); a number after the port that is
		// not the host is the backlog.
		options = { port: args[0] == null ? 0 : Number(args[0]) };
		const backlog = args.slice(1).find((v) => typeof v === "number");
		if (backlog !== undefined) {
			options.backlog = backlog;
		}
	} else if (
		typeof args[0] === "object" &&
		args[0].path === undefined &&
		args[0].fd === undefined &&
		args[0].handle === undefined &&
		args[0]._handle === undefined
	) {
		options = { ...args[0] };
	} else {
		// A Unix socket path or an existing handle: not ours to move.
		return cb ? listen.call(this, ...args, cb) : listen.apply(this, args);
	}
	options.host = HOST;
	delete options.ipv6Only;
	this.once("listening", () => {
		const a = this.address();
		if (a && typeof a === "object") {
			process.stderr.write(`loopback: listening on ${a.address}:${a.port}\n`);
		}
	});
	return cb ? listen.call(this, options, cb) : listen.call(this, options);
};
