// The programs the tests run that are not Node: ffprobe and ffmpeg (reading platform
// recordings back, test/call-recording.test.ts) and a headless Chromium (the live
// machine view's page, test/debug-page.test.ts). Each comes from an npm package among
// the devDependencies, so `npm ci` then `npm test` needs nothing else on the machine and
// nothing is downloaded, at install or at run time. PATH is never searched: a test
// always runs the binary of the pinned package, whatever the machine has installed.
//   ffprobe   @ffprobe-installer/ffprobe → its platform package (linux-x64: a static build)
//   ffmpeg    @ffmpeg-installer/ffmpeg → its platform package (likewise static)
//   Chromium  @sparticuz/chromium: a brotli-compressed Chromium (headless shell) with its
//             few shared libraries, unpacked once per package version into
//             $TMPDIR/switchboard-chromium-<version>-<uid>/ (about 220 MB; reused by every
//             later run, delete it to unpack again)
import { spawnSync } from 'node:child_process';
import { accessSync, chmodSync, constants, existsSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

const require = createRequire(import.meta.url);

/**
 * The path of a binary that an installer package ships. Their platform packages mark the
 * file executable in a postinstall script (`chmod u+x`), which npm may not run (install
 * scripts not approved, `--ignore-scripts`): the same chmod is done here when needed.
 */
function shipped(pkg: '@ffprobe-installer/ffprobe' | '@ffmpeg-installer/ffmpeg'): string {
  let path: string;
  try {
    path = (require(pkg) as { path: string }).path;
  } catch (err) {
    throw new Error(`${pkg} has no binary for ${process.platform}-${process.arch} installed (run npm ci): ${String(err)}`);
  }
  try {
    accessSync(path, constants.X_OK);
  } catch {
    chmodSync(path, statSync(path).mode | 0o100);
  }
  return path;
}

let ffprobe: string | undefined;
let ffmpeg: string | undefined;
/** ffprobe from @ffprobe-installer/ffprobe. */
export const ffprobePath = (): string => (ffprobe ??= shipped('@ffprobe-installer/ffprobe'));
/** ffmpeg from @ffmpeg-installer/ffmpeg. */
export const ffmpegPath = (): string => (ffmpeg ??= shipped('@ffmpeg-installer/ffmpeg'));

/** What playwright-core's `launch`/`launchPersistentContext` needs to start the shipped Chromium. */
export interface ChromiumLaunch {
  executablePath: string;
  /** Variables the browser process needs beside the test's own (its bundled libraries and fonts). */
  env: Record<string, string>;
}

/** @sparticuz/chromium ships a Chromium for Linux x64 only. */
export const chromiumShipped = (): boolean => process.platform === 'linux' && process.arch === 'x64';

/**
 * The shipped Chromium, unpacked on first use. The package's own `executablePath()`
 * unpacks into `os.tmpdir()` itself (/tmp/chromium, /tmp/fonts…), not atomically, and
 * returns whatever /tmp/chromium already is: two test runs at once, or another
 * project's Chromium there, would share or break it. So it is run in a child process
 * whose TMPDIR is a fresh folder of ours, which then becomes the version's folder with
 * one rename (a run that loses the race to another uses the winner's).
 */
export function shippedChromium(): ChromiumLaunch {
  if (!chromiumShipped()) throw new Error(`@sparticuz/chromium ships no Chromium for ${process.platform}-${process.arch}`);
  // The package's exports hide package.json: find it from the entry point (build/cjs/index.cjs).
  const entry = require.resolve('@sparticuz/chromium');
  const pkgDir = join(dirname(entry), '..', '..');
  const version = (JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')) as { version: string }).version;
  const dir = join(tmpdir(), `switchboard-chromium-${version}-${process.getuid?.() ?? 0}`);
  const launch = (): ChromiumLaunch => ({
    executablePath: join(dir, 'chromium'),
    env: {
      // Only glibc comes from the machine: NSS, NSPR and expat are the package's own
      // (its Amazon Linux 2023 set), so a machine without Debian's libnss3 runs it too.
      LD_LIBRARY_PATH: join(dir, 'al2023', 'lib'),
      FONTCONFIG_PATH: join(dir, 'fonts'),
    },
  });
  if (existsSync(join(dir, 'chromium'))) return launch();

  const staging = mkdtempSync(join(tmpdir(), `switchboard-chromium-${version}-unpacking-`));
  try {
    const esm = pathToFileURL(join(pkgDir, 'build', 'esm', 'index.js')).href;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', `const { default: C } = await import(${JSON.stringify(esm)}); console.log(await C.executablePath(${JSON.stringify(join(pkgDir, 'bin'))}));`], {
      // The package unpacks its bundled libraries (al2023.tar.br) only where it believes it
      // runs on Amazon Linux 2023, which this variable tells it; nothing else reads it.
      env: { ...process.env, TMPDIR: staging, AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs20.x' },
      encoding: 'utf8',
      timeout: 120_000,
    });
    if (r.status !== 0 || !existsSync(join(staging, 'chromium')) || !existsSync(join(staging, 'al2023', 'lib', 'libnss3.so'))) {
      throw new Error(`unpacking @sparticuz/chromium ${version} failed (status ${r.status}, ${r.error?.message ?? ''}): ${r.stderr.slice(-2000)}`);
    }
    // The package's fonts.conf names /tmp/fonts; point it at this folder's copy.
    writeFileSync(
      join(staging, 'fonts', 'fonts.conf'),
      `<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n  <dir>${join(dir, 'fonts', 'fonts')}</dir>\n  <cachedir>${join(dir, 'fonts-cache')}</cachedir>\n</fontconfig>\n`,
    );
    try {
      renameSync(staging, dir);
    } catch (err) {
      // Another run unpacked it first (ENOTEMPTY/EEXIST): use theirs.
      if (!existsSync(join(dir, 'chromium'))) throw err;
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return launch();
}
