/**
 * The code blocks of README.md and docs/*.md that are not a user's whole project: each block is
 * the {@code tag::NAME[]} regions of one of these files (an import region, then the code), which
 * this module compiles; DocSnippetsTest compares them word for word, and DocSnippetsRunTest runs
 * the ones that need no broker.
 */
package io.relaykit.docs;
