/*
 * relaykit browser poller: polls a job's status URL politely until the job finishes.
 *
 * Same semantics as the Java StatusPoller:
 *  - one request in flight at a time; the next is scheduled only after the answer arrived;
 *  - capped exponential backoff with full jitter (default 1 s doubling to 8 s);
 *  - Retry-After (seconds or HTTP date) is a floor on the next delay;
 *  - 5xx, 429 and network errors are retried; other 4xx and unreadable bodies end with "error";
 *  - stops at a deadline with "timeout" ("still working — check later"), at maxAttempts, when
 *    cancelled, and when the page is hidden or left (pagehide / visibilitychange);
 *  - silent: no alerts, no console noise; callers get onUpdate/onDone callbacks.
 *
 * Usage:
 *   const poll = RelayKitPoller.poll('/orders/42/status', {
 *     onUpdate: doc => render(doc),        // every status document read
 *     onDone: outcome => finish(outcome),  // once: {result, last, attempts, detail}
 *   });
 *   poll.cancel();
 *
 * result is one of: "success", "failed", "timeout", "max-attempts", "cancelled", "hidden", "error".
 */
(function (global) {
  'use strict';

  var DEFAULTS = {
    initialMs: 1000,
    maxMs: 8000,
    deadlineMs: 120000,
    maxAttempts: 100,
    stopWhenHidden: true,
    onUpdate: function () {},
    onDone: function () {}
  };

  function retryAfterMs(response) {
    var value = response.headers.get('Retry-After');
    if (!value) { return 0; }
    var seconds = Number(value);
    if (!isNaN(seconds) && seconds >= 0) { return seconds * 1000; }
    var at = Date.parse(value);
    return isNaN(at) ? 0 : Math.max(0, at - Date.now());
  }

  function poll(url, options) {
    var o = {};
    Object.keys(DEFAULTS).forEach(function (k) {
      o[k] = options && options[k] !== undefined ? options[k] : DEFAULTS[k];
    });
    var start = Date.now();
    var attempts = 0;
    var last = null;
    var timer = null;
    var controller = null;
    var done = false;

    function finish(result, detail) {
      if (done) { return false; }
      done = true;
      if (timer) { clearTimeout(timer); }
      if (controller) { controller.abort(); }
      removeListeners();
      o.onDone({ result: result, last: last, attempts: attempts, detail: detail });
      return true;
    }

    function scheduleNext(floorMs) {
      if (done) { return; }
      if (attempts >= o.maxAttempts) {
        finish('max-attempts', 'still working — check later');
        return;
      }
      var capped = Math.min(o.maxMs, o.initialMs * Math.pow(2, attempts - 1));
      var delay = Math.max(Math.random() * capped, floorMs || 0);
      if (Date.now() + delay >= start + o.deadlineMs) {
        finish('timeout', 'still working — check later');
        return;
      }
      timer = setTimeout(request, delay);
    }

    function request() {
      timer = null;
      if (done) { return; }
      attempts++;
      controller = typeof AbortController === 'function' ? new AbortController() : null;
      fetch(url, {
        headers: { 'Accept': 'application/json' },
        cache: 'no-store',
        signal: controller ? controller.signal : undefined
      }).then(function (response) {
        controller = null;
        if (done) { return; }
        var floor = retryAfterMs(response);
        if (response.status === 200) {
          return response.json().then(function (doc) {
            if (done) { return; }
            if (!doc || typeof doc.status !== 'string') {
              finish('error', 'unreadable status document');
              return;
            }
            last = doc;
            o.onUpdate(doc);
            if (doc.status === 'SUCCESS') { finish('success', 'done'); }
            else if (doc.status === 'FAILED') { finish('failed', doc.error || 'failed'); }
            else { scheduleNext(floor); }
          }, function () { finish('error', 'unreadable status document'); });
        }
        if (response.status === 429 || response.status >= 500) {
          scheduleNext(floor);
          return;
        }
        finish('error', 'HTTP ' + response.status);
      }, function () {
        controller = null;
        if (!done) { scheduleNext(0); }
      });
    }

    function onHidden() {
      if (document.visibilityState === 'hidden') { finish('hidden', 'page hidden'); }
    }
    function onLeave() { finish('hidden', 'page left'); }
    function removeListeners() {
      if (o.stopWhenHidden && typeof document !== 'undefined') {
        document.removeEventListener('visibilitychange', onHidden);
        global.removeEventListener('pagehide', onLeave);
      }
    }
    if (o.stopWhenHidden && typeof document !== 'undefined') {
      document.addEventListener('visibilitychange', onHidden);
      global.addEventListener('pagehide', onLeave);
    }

    request();
    return {
      cancel: function () { return finish('cancelled', 'cancelled'); },
      isDone: function () { return done; }
    };
  }

  global.RelayKitPoller = { poll: poll, defaults: DEFAULTS };
})(typeof window !== 'undefined' ? window : this);
