#!/usr/bin/env bash
# ./relaykit release: builds a release of every published artifact and writes, under --out, the
# bundle Maven Central's publishing portal accepts. docs/releasing.md says what it needs and what
# to do with the bundle. The work tree is never changed: the release is built from a copy.
#
#   RELAYKIT_GPG_KEY=<key id, fingerprint or email> ./relaykit release [--version V] [--out DIR]
#       [-- extra Maven arguments]
#
# Exit status: 0 bundle written; 1 the build or signing failed; 2 bad usage or missing key.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# The modules that are built and tested with the rest but never published.
UNPUBLISHED='!examples,!examples/spring-boot-app,!chaos,!benchmarks,!architecture-tests,!test-support'
# The release build leaves them out, except test-support: published modules name it as a test
# dependency, which Maven resolves even when their tests are not compiled, and its pom skips
# install and deploy.
NOT_BUILT=${UNPUBLISHED/,!test-support/}

usage() {
  cat <<'USAGE'
usage: RELAYKIT_GPG_KEY=KEY ./relaykit release [--version V] [--out DIR] [-- MAVEN ARGS]

  --version V   the version to release (default: the project's version without -SNAPSHOT)
  --out DIR     where to write (default: target/release): an empty folder or one this
                command wrote before, whose src, staging and bundle it replaces
  -- ARGS       passed to Maven as they are (not -o: Maven deploys nothing offline)

  RELAYKIT_GPG_KEY         the key that signs every file (key id, fingerprint or user id of a
                           secret key in the keyring; GNUPGHOME selects another keyring)
  RELAYKIT_GPG_PASSPHRASE  its passphrase, when it has one and no gpg-agent holds it
  RELAYKIT_MVN             the Maven to run (default: mvn on PATH, else ./mvnw)

Writes DIR/staging/io/relaykit/<artifact>/<version>/... (pom, jar, -sources.jar, -javadoc.jar,
each with .asc, .md5 and .sha1) and DIR/relaykit-<version>-bundle.zip, the file to upload.
USAGE
}

fail() { echo "relaykit release: $1" >&2; exit "${2:-1}"; }

version=""
out="$ROOT/target/release"
maven_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --version) [ $# -ge 2 ] || fail "--version needs a value" 2; version=$2; shift 2 ;;
    --out) [ $# -ge 2 ] || fail "--out needs a directory" 2; out=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; maven_args=("$@"); break ;;
    *) usage >&2; fail "unknown option: $1" 2 ;;
  esac
done

# The project's version: the first <version> of the root pom (relaykit-parent's own).
dev_version=$(sed -n 's:^  <version>\(.*\)</version>.*:\1:p' "$ROOT/pom.xml" | head -1)
[ -n "$dev_version" ] || fail "no <version> found in $ROOT/pom.xml"
[ -n "$version" ] || version=${dev_version%-SNAPSHOT}
case "$version" in
  *SNAPSHOT*) fail "a release version cannot be a snapshot: $version" 2 ;;
  *[!0-9A-Za-z.-]*|"") fail "not a version: '$version'" 2 ;;
esac

[ -n "${RELAYKIT_GPG_KEY:-}" ] || { usage >&2; fail "set RELAYKIT_GPG_KEY to the key that signs the release" 2; }
command -v gpg >/dev/null 2>&1 || fail "gpg is needed to sign the release (apt-get install gnupg)" 2
gpg --batch --list-secret-keys "$RELAYKIT_GPG_KEY" >/dev/null 2>&1 \
  || fail "no secret key '$RELAYKIT_GPG_KEY' in the keyring (${GNUPGHOME:-~/.gnupg})" 2
command -v java >/dev/null 2>&1 || fail "Java 17+ is needed" 2

if [ -n "${RELAYKIT_MVN:-}" ]; then
  MVN=("$RELAYKIT_MVN")
elif command -v mvn >/dev/null 2>&1; then
  MVN=(mvn)
else
  MVN=("$ROOT/mvnw")
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)
case "$ROOT/" in "$out/"*) fail "--out must not contain the repository: $out" 2 ;; esac
# Only a folder this command made (it leaves a marker there) or an empty one is emptied.
if [ ! -e "$out/.relaykit-release" ] && [ -n "$(ls -A "$out")" ]; then
  fail "--out $out is not empty and was not written by ./relaykit release" 2
fi
touch "$out/.relaykit-release"
rm -rf "$out/src" "$out/staging" "$out"/relaykit-*-bundle.zip "$out/build.log"
mkdir -p "$out/src" "$out/staging"

# 1. A copy of what a clone holds (tracked files plus untracked ones git does not ignore), with
#    every pom's project version set to the release version.
echo "relaykit release: building $version from a copy in $out/src" >&2
if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard \
    | while IFS= read -r -d '' f; do [ -f "$f" ] && printf '%s\0' "$f"; done \
    | tar --null -T - -cf -) | tar -C "$out/src" -xf -
else
  (cd "$ROOT" && tar --exclude=./target --exclude='*/target' --exclude=./data -cf - .) \
    | tar -C "$out/src" -xf -
fi
poms=$(cd "$out/src" && find . -name pom.xml -not -path '*/src/*' | sort)
for pom in $poms; do
  # Only the exact project and parent version: a line holding <version>DEV</version>.
  sed -i "s:<version>${dev_version//./\\.}</version>:<version>${version}</version>:" "$out/src/$pom"
done
if grep -l -- "-SNAPSHOT" $(for p in $poms; do echo "$out/src/$p"; done) >/dev/null 2>&1; then
  fail "a pom still names a snapshot after setting $version: $(cd "$out/src" && grep -l -- -SNAPSHOT $poms | tr '\n' ' ')"
fi

# 2. Build the published modules (tests are the CI's job, not the release's: they are neither
#    compiled nor run, except that relaykit-kafka compiles its own for its published tests jar)
#    and deploy them into the staging folder: Maven writes the repository layout and each file's
#    .md5 and .sha1. Nothing is installed into the local repository.
(cd "$out/src" && TZ=UTC "${MVN[@]}" -B -Prelease \
    -pl "$NOT_BUILT" \
    -Dmaven.test.skip=true -Dinvoker.skip=true -Drelaykit.bootVersions.skip=true \
    -Dmaven.install.skip=true \
    -DaltDeploymentRepository="relaykit-staging::file://$out/staging" \
    ${maven_args[@]+"${maven_args[@]}"} \
    deploy) >"$out/build.log" 2>&1 \
  || { tail -n 60 "$out/build.log" >&2; fail "the release build failed; log: $out/build.log"; }

# 3. The portal builds its own metadata; checksums are for artifacts, not for signatures.
find "$out/staging" -type f \( -name 'maven-metadata*' -o -name '*.asc.md5' -o -name '*.asc.sha1' \) -delete

# 4. A detached ASCII-armoured signature beside every artifact.
sign=(gpg --batch --yes --armor --detach-sign --local-user "$RELAYKIT_GPG_KEY")
if [ -n "${RELAYKIT_GPG_PASSPHRASE:-}" ]; then
  sign+=(--pinentry-mode loopback --passphrase-fd 0)
fi
count=0
while IFS= read -r -d '' f; do
  [ -f "$f.md5" ] && [ -f "$f.sha1" ] || fail "Maven wrote no checksum for $f"
  if [ -n "${RELAYKIT_GPG_PASSPHRASE:-}" ]; then
    printf '%s' "$RELAYKIT_GPG_PASSPHRASE" | "${sign[@]}" --output "$f.asc" "$f" \
      || fail "gpg could not sign $f"
  else
    "${sign[@]}" --output "$f.asc" "$f" </dev/null || fail "gpg could not sign $f"
  fi
  count=$((count + 1))
done < <(find "$out/staging" -type f ! -name '*.md5' ! -name '*.sha1' ! -name '*.asc' -print0 | sort -z)

# 5. The bundle: a zip of the repository layout, io/ at its root.
bundle="$out/relaykit-$version-bundle.zip"
(cd "$out/staging" && jar --create --no-manifest --file "$bundle" io)

artifacts=$(find "$out/staging/io/relaykit" -mindepth 1 -maxdepth 1 -type d | wc -l)
echo "relaykit release: $artifacts artifacts, $count files signed with $RELAYKIT_GPG_KEY"
echo "relaykit release: staging folder $out/staging"
echo "relaykit release: bundle $bundle (upload it to the publishing portal: docs/releasing.md)"
