/*
 * relaykit browser poller: polls a job's status URL politely until the job finishes.
 *
 * Same semantics as the Java StatusPoller:
 *  - one request in flight at a time; the next is scheduled only after the answer arrived;
 *  - capped exponential backoff with full jitter (default 1 s doubling to 8 s);
 *  - Retry-After (seconds or HTTP date) is a floor on the next delay; pollAfter(response) also
 *    waits the submit answer's Retry-After before the first request;
 *  - 5xx, 429 and network errors are retried; other 4xx and unreadable bodies end with "error";
 *  - stops at a deadline with "timeout" ("still working — check later"), at maxAttempts, when
 *    cancelled, and when the page is hidden or left (pagehide / visibilitychange);
 *  - silent: no alerts, no console noise; callers get onUpdate/onDone callbacks.
 *
 * Usage:
 *   fetch('/orders', { method: 'POST', ... }).then(response => {
 *     // 202 Accepted: polls its Location, first after its Retry-After
 *     const poll = RelayKitPoller.pollAfter(response, {
 *       onUpdate: doc => render(doc),        // every status document read
 *       onDone: outcome => finish(outcome),  // once: {result, last, attempts, detail}
 *     });
 *     poll.cancel();
 *   });
 *   RelayKitPoller.poll('/orders/42/status', options);  // first request at once (or firstDelayMs)
 *
 * result is one of: "success", "failed", "timeout", "max-attempts", "cancelled", "hidden", "error".
 *
 * Options (defaults in RelayKitPoller.defaults): initialMs, maxMs (the backoff before jitter,
 * attempt n waits random() * min(maxMs, initialMs * 2^(n-1))), firstDelayMs (wait before the first
 * request), deadlineMs (from the call, first delay included), maxAttempts, stopWhenHidden,
 * onUpdate, onDone. For deterministic tests, time can be injected: setTimeout(fn, ms) and
 * clearTimeout(id) (how waits happen), now() (epoch ms, for the deadline and HTTP-date
 * Retry-After) and random() (in [0, 1), the jitter). Requests always use the real fetch.
 */
(function (global) {
  'use strict';

  var DEFAULTS = {
    initialMs: 1000,
    maxMs: 8000,
    deadlineMs: 120000,
    maxAttempts: 100,
    firstDelayMs: 0,
    stopWhenHidden: true,
    onUpdate: function () {},
    onDone: function () {},
    // Bound wrappers: the platform functions throw when called as methods of another object.
    setTimeout: function (fn, ms) { return global.setTimeout(fn, ms); },
    clearTimeout: function (id) { global.clearTimeout(id); },
    now: function () { return Date.now(); },
    random: function () { return Math.random(); }
  };

  var STATUSES = ['PENDING', 'PROCESSING', 'SUCCESS', 'FAILED'];

  function retryAfterMs(response, now) {
    var value = response.headers.get('Retry-After');
    if (!value) { return 0; }
    var seconds = Number(value);
    if (!isNaN(seconds) && seconds >= 0) { return seconds * 1000; }
    var at = Date.parse(value);
    return isNaN(at) ? 0 : Math.max(0, at - now);
  }

  function settings(options) {
    var o = {};
    Object.keys(DEFAULTS).forEach(function (k) {
      o[k] = options && options[k] !== undefined ? options[k] : DEFAULTS[k];
    });
    ['initialMs', 'maxMs', 'deadlineMs', 'maxAttempts'].forEach(function (k) {
      if (typeof o[k] !== 'number' || !(o[k] > 0)) {
        throw new RangeError('RelayKitPoller: ' + k + ' must be a positive number, was ' + o[k]);
      }
    });
    if (typeof o.firstDelayMs !== 'number' || !(o.firstDelayMs >= 0)) {
      throw new RangeError('RelayKitPoller: firstDelayMs must be >= 0, was ' + o.firstDelayMs);
    }
    return o;
  }

  function poll(url, options) {
    var o = settings(options);
    var start = o.now();
    var attempts = 0;
    var last = null;
    var timer = null;
    var controller = null;
    var done = false;

    function finish(result, detail) {
      if (done) { return false; }
      done = true;
      if (timer !== null) { o.clearTimeout(timer); timer = null; }
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
      wait(Math.max(o.random() * capped, floorMs || 0));
    }

    function wait(delay) {
      if (o.now() + delay >= start + o.deadlineMs) {
        finish('timeout', 'still working — check later');
        return;
      }
      timer = o.setTimeout(request, delay);
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
        var floor = retryAfterMs(response, o.now());
        if (response.status === 200) {
          return response.json().then(function (doc) {
            if (done) { return; }
            if (!doc || STATUSES.indexOf(doc.status) < 0) {
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

    if (o.firstDelayMs > 0) { wait(o.firstDelayMs); } else { request(); }
    return {
      cancel: function () { return finish('cancelled', 'cancelled'); },
      isDone: function () { return done; }
    };
  }

  /*
   * Polls the Location of a submit answer (a fetch Response, 202 Accepted), the first request
   * after its Retry-After; options.firstDelayMs, when given, wins. Throws an Error when the answer
   * is not a 202 with a Location: there is nothing to poll.
   */
  function pollAfter(response, options) {
    if (!response || response.status !== 202) {
      throw new Error('RelayKitPoller.pollAfter: expected a 202 Accepted answer, was '
          + (response ? 'HTTP ' + response.status : response));
    }
    var location = response.headers.get('Location');
    if (!location) {
      throw new Error('RelayKitPoller.pollAfter: the 202 answer has no Location header');
    }
    var o = {};
    Object.keys(options || {}).forEach(function (k) { o[k] = options[k]; });
    if (o.firstDelayMs === undefined) {
      var now = o.now || DEFAULTS.now;
      o.firstDelayMs = retryAfterMs(response, now());
    }
    return poll(new URL(location, response.url || global.location.href).href, o);
  }

  global.RelayKitPoller = { poll: poll, pollAfter: pollAfter, defaults: DEFAULTS };
})(typeof window !== 'undefined' ? window : this);
