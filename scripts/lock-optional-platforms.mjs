// Adds lockfile entries for optional platform binaries (rollup, esbuild, litestream…)
// that this machine's npm registry mirror does not serve. npm records only what it
// could resolve, and `npm ci` then refuses a lockfile that lacks the other platforms'
// optional packages. The entries carry os/cpu/libc, so npm skips them on other
// platforms exactly as it would with registry metadata. Run after `npm install`.
import { readFileSync, writeFileSync } from 'node:fs';

const lock = JSON.parse(readFileSync('package-lock.json', 'utf8'));
const pkgs = lock.packages;

function platformOf(name) {
  const tail = name.split('/').pop();
  const os = ['darwin', 'linux', 'win32', 'freebsd', 'openbsd', 'netbsd', 'android', 'sunos', 'aix', 'openharmony', 'cygwin'].find((o) => tail.includes(o) || (o === 'win32' && tail.includes('win32')));
  const cpus = ['arm64', 'x64', 'ia32', 'arm', 'loong64', 'ppc64', 'riscv64', 's390x', 'mips64el', 'mipsel', 'wasm32'];
  const cpu = cpus.find((c) => tail.split('-').includes(c) || tail.includes(`-${c}-`) || tail.endsWith(`-${c}`)) ?? cpus.find((c) => tail.includes(c));
  const libc = tail.includes('musl') ? 'musl' : tail.includes('gnu') ? 'glibc' : undefined;
  return { os, cpu, libc };
}

let added = 0;
for (const [path, meta] of Object.entries(pkgs)) {
  for (const [dep, range] of Object.entries(meta.optionalDependencies ?? {})) {
    const base = path === '' ? '' : `${path}/`;
    const at = `${base}node_modules/${dep}`;
    if (pkgs[at] || pkgs[`node_modules/${dep}`]) continue;
    const { os, cpu, libc } = platformOf(dep);
    if (!os && !cpu) continue;
    const entry = { version: String(range).replace(/^[\^~=]/, ''), optional: true };
    if (cpu) entry.cpu = [cpu];
    if (os) entry.os = [os];
    if (libc) entry.libc = [libc];
    pkgs[`node_modules/${dep}`] = entry;
    added++;
  }
}
lock.packages = Object.fromEntries(Object.entries(pkgs).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))));
writeFileSync('package-lock.json', JSON.stringify(lock, null, 2) + '\n');
console.log(`added ${added} optional platform entries`);
