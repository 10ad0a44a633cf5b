/* kb gaps page: GET /v1/gaps and POST /v1/gaps/{id}/link with the admin token.
 * Text is only ever set with textContent; the token stays in sessionStorage (this tab). */
(function () {
  'use strict';
  var TOKEN_KEY = 'kb.adminToken';

  function $(id) { return document.getElementById(id); }
  function h(tag, attrs, children) {
    var el = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === 'class') el.className = attrs[k]; else el.setAttribute(k, String(attrs[k]));
    });
    (children || []).forEach(function (c) {
      el.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    });
    return el;
  }
  function say(text, isError) {
    var s = $('gaps-status');
    s.textContent = text;
    s.className = isError ? 'field-error' : 'note';
  }
  function api(method, url, body) {
    var headers = { 'Accept': 'application/json', 'Authorization': 'Bearer ' + $('token').value.trim() };
    if (body) headers['Content-Type'] = 'application/json';
    return fetch(url, { method: method, headers: headers, body: body ? JSON.stringify(body) : undefined })
      .then(function (res) {
        return res.text().then(function (text) {
          var data = null;
          try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
          if (!res.ok) throw new Error((data && data.detail) || res.statusText || ('HTTP ' + res.status));
          return data;
        });
      });
  }
  function ago(epoch) {
    var s = Math.max(0, Date.now() / 1000 - epoch);
    if (s >= 86400) return Math.floor(s / 86400) + 'd';
    if (s >= 3600) return Math.floor(s / 3600) + 'h';
    return Math.floor(s / 60) + 'm';
  }
  function row(g) {
    var input = h('input', { type: 'text', value: (g.closest && g.closest[0]) || '', 'aria-label': 'Article id for gap ' + g.gap_id });
    var button = h('button', { type: 'button', class: 'secondary' }, ['Link']);
    var result = h('span', { class: 'note' }, []);
    button.addEventListener('click', function () {
      button.disabled = true;
      api('POST', '/v1/gaps/' + encodeURIComponent(g.gap_id) + '/link', { article_id: input.value.trim() })
        .then(function (r) { result.textContent = 'Linked: ' + r.file + ' updated and re-indexed.'; })
        .catch(function (e) { result.textContent = 'Not linked: ' + e.message; button.disabled = false; });
    });
    var votes = (g.unhelpful ? ' · 👎 ' + g.unhelpful : '') + (g.helpful ? ' · 👍 ' + g.helpful : '');
    return h('li', { class: 'card', 'data-gap-id': g.gap_id }, [
      h('p', { class: 'results-meta' }, [g.gap_id + ' · ' + g.count + ' search(es) · ' + g.users + ' user(s)' + votes +
        ' · last ' + ago(g.last_seen) + ' ago · via ' + g.doors.join(', ')]),
      h('pre', { class: 'error-line' }, [h('code', {}, [g.example])]),
      h('p', {}, ['Closest: ' + ((g.closest || []).join(', ') || '—')]),
      h('p', {}, [input, ' ', button, ' ', result])
    ]);
  }
  function load(event) {
    if (event) event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $('token').value.trim());
    var since = $('since').value;
    say('Loading…');
    api('GET', '/v1/gaps' + (since ? '?since=' + encodeURIComponent(since) : ''))
      .then(function (data) {
        var list = $('gaps');
        while (list.firstChild) list.removeChild(list.firstChild);
        if (!data.gaps.length) { say('No gaps: every recorded search in this period got an answer.'); return; }
        say(data.gaps.length + ' gap(s).');
        var ol = h('ol', { class: 'cards' }, []);
        data.gaps.forEach(function (g) { ol.appendChild(row(g)); });
        list.appendChild(ol);
      })
      .catch(function (e) { say('Could not load the gaps: ' + e.message, true); });
  }
  document.addEventListener('DOMContentLoaded', function () {
    $('token').value = sessionStorage.getItem(TOKEN_KEY) || '';
    $('gaps-form').addEventListener('submit', load);
    if ($('token').value) load();
  });
})();
