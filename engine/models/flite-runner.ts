// The in-memory WASI runner for Flite (see flite.ts for why not node:wasi). Plain JavaScript source so that the same
// code runs inline (via `new Function`) and inside `new Worker(..., { eval: true })` without any TypeScript loader in
// the worker. runFlite(module, args) -> { code, stdout, stderr, files: { name: Uint8Array } }
export const FLITE_RUNNER_SOURCE = String.raw`function runFlite(module, args) {
  var ESUCCESS = 0, EBADF = 8, EINVAL = 28, ENOENT = 44, ESPIPE = 70;
  var PREOPEN = '/tmp', DIRFD = 3;
  var enc = new TextEncoder();
  var dec = new TextDecoder();
  var files = new Map();
  var fds = new Map();
  fds.set(0, { kind: 'in' });
  fds.set(1, { kind: 'out', chunks: [] });
  fds.set(2, { kind: 'out', chunks: [] });
  fds.set(DIRFD, { kind: 'dir' });
  var nextFd = 4;
  var memory = null;
  var argBytes = args.map(function (a) { return enc.encode(a + '\0'); });
  function Exit(code) { this.code = code; }
  function u8() { return new Uint8Array(memory.buffer); }
  function dv() { return new DataView(memory.buffer); }
  function iovecs(ptr, len) {
    var d = dv(), r = [];
    for (var i = 0; i < len; i++) r.push([d.getUint32(ptr + i * 8, true), d.getUint32(ptr + i * 8 + 4, true)]);
    return r;
  }
  var wasi = {
    args_sizes_get: function (countPtr, sizePtr) {
      var d = dv(), size = 0;
      for (var i = 0; i < argBytes.length; i++) size += argBytes[i].length;
      d.setUint32(countPtr, argBytes.length, true);
      d.setUint32(sizePtr, size, true);
      return ESUCCESS;
    },
    args_get: function (argvPtr, bufPtr) {
      var d = dv(), m = u8(), p = bufPtr;
      for (var i = 0; i < argBytes.length; i++) { d.setUint32(argvPtr + i * 4, p, true); m.set(argBytes[i], p); p += argBytes[i].length; }
      return ESUCCESS;
    },
    clock_time_get: function (id, precision, outPtr) {
      dv().setBigUint64(outPtr, BigInt(Date.now()) * 1000000n, true);
      return ESUCCESS;
    },
    fd_close: function (fd) {
      if (!fds.has(fd)) return EBADF;
      if (fd > DIRFD) fds.delete(fd);
      return ESUCCESS;
    },
    fd_fdstat_get: function (fd, ptr) {
      var f = fds.get(fd);
      if (!f) return EBADF;
      var d = dv();
      d.setUint8(ptr, f.kind === 'dir' ? 3 : f.kind === 'file' ? 4 : 2);
      d.setUint16(ptr + 2, 0, true);
      d.setBigUint64(ptr + 8, 0xffffffffffffffffn, true);
      d.setBigUint64(ptr + 16, 0xffffffffffffffffn, true);
      return ESUCCESS;
    },
    fd_fdstat_set_flags: function (fd) { return fds.has(fd) ? ESUCCESS : EBADF; },
    fd_prestat_get: function (fd, ptr) {
      if (fd !== DIRFD) return EBADF;
      var d = dv();
      d.setUint8(ptr, 0);
      d.setUint32(ptr + 4, PREOPEN.length, true);
      return ESUCCESS;
    },
    fd_prestat_dir_name: function (fd, ptr, len) {
      if (fd !== DIRFD) return EBADF;
      u8().set(enc.encode(PREOPEN).subarray(0, len), ptr);
      return ESUCCESS;
    },
    fd_read: function (fd, iovsPtr, iovsLen, nreadPtr) {
      var f = fds.get(fd);
      if (!f) return EBADF;
      var n = 0;
      if (f.kind === 'file') {
        var m = u8(), vs = iovecs(iovsPtr, iovsLen);
        for (var i = 0; i < vs.length; i++) {
          var p = vs[i][0], l = vs[i][1];
          var k = Math.max(0, Math.min(l, f.file.size - f.pos));
          m.set(f.file.data.subarray(f.pos, f.pos + k), p);
          f.pos += k; n += k;
          if (k < l) break;
        }
      }
      dv().setUint32(nreadPtr, n, true);
      return ESUCCESS;
    },
    fd_write: function (fd, iovsPtr, iovsLen, nwrittenPtr) {
      var f = fds.get(fd);
      if (!f || f.kind === 'in' || f.kind === 'dir') return EBADF;
      var m = u8(), vs = iovecs(iovsPtr, iovsLen), n = 0;
      for (var i = 0; i < vs.length; i++) {
        var p = vs[i][0], l = vs[i][1];
        n += l;
        if (f.kind === 'out') { f.chunks.push(m.slice(p, p + l)); continue; }
        var file = f.file, end = f.pos + l;
        if (end > file.data.length) {
          var grown = new Uint8Array(Math.max(end, file.data.length * 2, 65536));
          grown.set(file.data.subarray(0, file.size));
          file.data = grown;
        }
        file.data.set(m.subarray(p, p + l), f.pos);
        f.pos = end;
        if (end > file.size) file.size = end;
      }
      dv().setUint32(nwrittenPtr, n, true);
      return ESUCCESS;
    },
    fd_seek: function (fd, offset, whence, outPtr) {
      var f = fds.get(fd);
      if (!f) return EBADF;
      if (f.kind !== 'file') return ESPIPE;
      var base = whence === 0 ? 0 : whence === 1 ? f.pos : f.file.size;
      var pos = base + Number(offset);
      if (pos < 0) return EINVAL;
      f.pos = pos;
      dv().setBigUint64(outPtr, BigInt(pos), true);
      return ESUCCESS;
    },
    path_open: function (dirfd, dirflags, pathPtr, pathLen, oflags, rightsBase, rightsInheriting, fdflags, fdOutPtr) {
      if (dirfd !== DIRFD) return EBADF;
      var name = dec.decode(u8().subarray(pathPtr, pathPtr + pathLen));
      var file = files.get(name);
      if (!file) {
        if (!(oflags & 1)) return ENOENT;
        file = { data: new Uint8Array(0), size: 0 };
        files.set(name, file);
      } else if (oflags & 8) {
        file.size = 0;
      }
      var fd = nextFd++;
      fds.set(fd, { kind: 'file', file: file, pos: (fdflags & 1) ? file.size : 0 });
      dv().setUint32(fdOutPtr, fd, true);
      return ESUCCESS;
    },
    proc_exit: function (code) { throw new Exit(code); },
  };
  var instance = new WebAssembly.Instance(module, { wasi_snapshot_preview1: wasi });
  memory = instance.exports.memory;
  var code = 0;
  try {
    instance.exports._start();
  } catch (e) {
    if (e instanceof Exit) code = e.code; else throw e;
  }
  function text(f) {
    var total = 0, i;
    for (i = 0; i < f.chunks.length; i++) total += f.chunks[i].length;
    var all = new Uint8Array(total), o = 0;
    for (i = 0; i < f.chunks.length; i++) { all.set(f.chunks[i], o); o += f.chunks[i].length; }
    return dec.decode(all);
  }
  var out = {};
  files.forEach(function (f, name) { out[name] = f.data.slice(0, f.size); });
  return { code: code, stdout: text(fds.get(1)), stderr: text(fds.get(2)), files: out };
}`;
