/* kb web page: paste an error, read the answer.
 *
 * Plain JS, no build step, no third-party code. Results come from POST /web/search: the
 * API's answer plus each result's root cause and fix already rendered to HTML by the
 * server (markdown-it with raw HTML escaped and unsafe links dropped, routes/web.py); every
 * other value is set as text. Labels come from the one string table the server inlines
 * (api/static/strings.json). The page's Content-Security-Policy forbids inline script anyway.
 */
(function () {
  'use strict';

  var MAX_BYTES = 64 * 1024;       // the API's query limit (kb.config.MAX_QUERY_BYTES)
  var URL_MAX = 2000;              // longest encoded query put in the page link
  var TOP_K = 5;
  var CARDS = 3;                   // results shown as cards; the rest are listed by title
  var LANG_KEY = 'kb.lang';

  // Every label in both languages: one table (api/static/strings.json), inlined by the server as data.
  var I18N = JSON.parse(document.querySelector('meta[name="kb-strings"]').getAttribute('content'));

  var EXAMPLES = {
    nccl: '[rank1]:[E ProcessGroupNCCL.cpp:1414] [PG 0 Rank 1] Watchdog caught collective operation timeout: ' +
      'WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600031 milliseconds before timing out.\n' +
      '[rank1]:[E ProcessGroupNCCL.cpp:1682] [PG 0 Rank 1] Timeout at NCCL work: 1, last enqueued NCCL work: 1, last completed NCCL work: -1.\n' +
      'terminate called after throwing an instance of \'c10::DistBackendError\'',
    oom: '***** Running Evaluation *****\n  Num examples = 4000\n  Batch size = 8\n' +
      'Traceback (most recent call last):\n  File "train.py", line 142, in <module>\n    trainer.train()\n' +
      '  File ".../transformers/trainer.py", line 4181, in evaluation_loop\n    all_preds.add(logits)\n' +
      'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 9.27 GiB. GPU 0 has a total capacity of 79.15 GiB of which 6.11 GiB is free.',
    zh: '用 DeepSpeed ZeRO-3 跑 GRPO，loss 不更新了，日志一直刷这个警告，怎么办？\n' +
      '[WARNING] [parameter_offload.py:123] Invalidate trace cache @ step 812: expected module 12, but got module 640'
  };

  // -- small helpers ---------------------------------------------------------

  var state = { lang: 'en', last: null, controller: null, slowTimer: null, seq: 0 };

  function t(key, vars) {
    var table = I18N[state.lang] || I18N.en;
    var s = table[key] != null ? table[key] : (I18N.en[key] != null ? I18N.en[key] : key);
    if (vars) {
      s = s.replace(/\{(\w+)\}/g, function (m, name) { return vars[name] != null ? String(vars[name]) : m; });
    }
    return s;
  }

  /* h('div', {class: 'x', 'aria-label': '...'}, [child, 'text']) — attributes via setAttribute,
     text via text nodes; never innerHTML. */
  function h(tag, attrs, children) {
    var el = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        var v = attrs[k];
        if (v == null || v === false) return;
        if (k === 'class') el.className = v;
        else if (k === 'text') el.textContent = v;
        else el.setAttribute(k, v === true ? '' : String(v));
      });
    }
    append(el, children);
    return el;
  }

  function append(el, children) {
    if (children == null) return el;
    if (!Array.isArray(children)) children = [children];
    children.forEach(function (c) {
      if (c == null || c === false) return;
      el.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    });
    return el;
  }

  function clear(el) { while (el.firstChild) el.removeChild(el.firstChild); }

  function $(id) { return document.getElementById(id); }

  function utf8Length(s) {
    if (window.TextEncoder) return new TextEncoder().encode(s).length;
    return unescape(encodeURIComponent(s)).length;
  }

  function formatBytes(n) {
    if (n < 1024) return n + ' B';
    return (n / 1024).toFixed(n < 10 * 1024 ? 1 : 0).replace(/\.0$/, '') + ' KB';
  }

  /* Only absolute http(s) URLs become links. */
  function safeHref(url) {
    if (typeof url !== 'string' || !/^https?:\/\//i.test(url.trim())) return null;
    try {
      var u = new URL(url.trim());
      return (u.protocol === 'http:' || u.protocol === 'https:') ? u.href : null;
    } catch (e) {
      return null;
    }
  }

  function externalLink(href, text) {
    return h('a', { href: href, rel: 'nofollow noopener noreferrer' }, [text]);
  }

  function articleUrl(id) { return '/articles/' + encodeURIComponent(id); }

  function contentLang(lang) { return lang === 'zh' ? 'zh-CN' : (lang === 'en' ? 'en' : null); }

  // -- copy buttons ------------------------------------------------------------

  function copyText(text) {
    function fallback() {
      return new Promise(function (resolve, reject) {
        var ta = h('textarea', { readonly: true, class: 'offscreen', 'aria-hidden': 'true', tabindex: '-1' });
        ta.value = text;
        document.body.appendChild(ta);
        ta.select();
        var ok = false;
        try { ok = document.execCommand('copy'); } catch (e) { ok = false; }
        document.body.removeChild(ta);
        if (ok) resolve(); else reject(new Error('copy failed'));
      });
    }
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text).catch(fallback);
    }
    return fallback();
  }

  function flash(button, key, ms) {
    var label = button.querySelector('.btn-label') || button;
    label.setAttribute('data-i18n', key);
    label.textContent = t(key);
    button.classList.add('done');
    clearTimeout(button._kbTimer);
    button._kbTimer = setTimeout(function () {
      var base = button.getAttribute('data-label-key') || 'copy';
      label.setAttribute('data-i18n', base);
      label.textContent = t(base);
      button.classList.remove('done');
    }, ms || 1800);
  }

  function addCopyButtons(root) {
    var pres = root.querySelectorAll('pre');
    Array.prototype.forEach.call(pres, function (pre) {
      if (pre.parentNode && pre.parentNode.classList && pre.parentNode.classList.contains('codeblock')) return;
      if (pre.classList.contains('error-line')) return;
      var wrap = h('div', { class: 'codeblock' });
      pre.parentNode.insertBefore(wrap, pre);
      wrap.appendChild(pre);
      pre.setAttribute('tabindex', '0');   // scrollable region reachable by keyboard
      var button = h('button', {
        type: 'button', class: 'copy-btn', 'data-label-key': 'copy',
        'aria-label': t('copyCode'), 'data-i18n-aria-label': 'copyCode'
      }, [h('span', { class: 'btn-label', 'data-i18n': 'copy', text: t('copy') })]);
      button.addEventListener('click', function () {
        var code = pre.querySelector('code') || pre;
        copyText(code.textContent.replace(/\n$/, '')).then(
          function () { flash(button, 'copied'); },
          function () { flash(button, 'copyFailed', 4000); }
        );
      });
      wrap.appendChild(button);
    });
  }

  // -- language ------------------------------------------------------------------

  function storedLang() {
    try {
      var v = window.localStorage.getItem(LANG_KEY);
      if (v === 'en' || v === 'zh') return v;
    } catch (e) { /* storage blocked */ }
    return null;
  }

  function browserLang() {
    var langs = (navigator.languages && navigator.languages.length) ? navigator.languages : [navigator.language || 'en'];
    for (var i = 0; i < langs.length; i++) {
      var l = String(langs[i]).toLowerCase();
      if (l.indexOf('zh') === 0) return 'zh';
      if (l.indexOf('en') === 0) return 'en';
    }
    return 'en';
  }

  function rememberLang(lang) {
    try { window.localStorage.setItem(LANG_KEY, lang); } catch (e) { /* storage blocked */ }
    // so the server renders article pages in the same language on the next visit
    document.cookie = 'kb_lang=' + lang + '; path=/; max-age=31536000; SameSite=Lax';
  }

  function applyI18n(root) {
    document.documentElement.lang = state.lang === 'zh' ? 'zh-CN' : 'en';
    Array.prototype.forEach.call((root || document).querySelectorAll('[data-i18n]'), function (el) {
      var key = el.getAttribute('data-i18n');
      if (I18N.en[key] != null) el.textContent = t(key);
    });
    Array.prototype.forEach.call((root || document).querySelectorAll('[data-i18n-aria-label]'), function (el) {
      var key = el.getAttribute('data-i18n-aria-label');
      if (I18N.en[key] != null) el.setAttribute('aria-label', t(key));
    });
  }

  function initLang(onChange) {
    state.lang = storedLang() || browserLang();
    var cookie = /(?:^|;\s*)kb_lang=(\w+)/.exec(document.cookie);
    if (storedLang() && (!cookie || cookie[1] !== state.lang)) rememberLang(state.lang);
    applyI18n();
    var sw = $('lang-switch');
    if (sw) {
      sw.addEventListener('click', function () {
        state.lang = state.lang === 'zh' ? 'en' : 'zh';
        rememberLang(state.lang);
        applyI18n();
        if (onChange) onChange();
      });
    }
  }

  // -- the search page ------------------------------------------------------------

  function initSearchPage() {
    var form = $('search-form'), box = $('q'), count = $('q-count'), fieldError = $('q-error');
    var status = $('status'), results = $('results'), btnText = $('search-btn-text');

    var isMac = /Mac|iPhone|iPad/.test(navigator.platform || navigator.userAgent || '');
    if (isMac && $('kbd-mod')) $('kbd-mod').textContent = '⌘';

    function showFieldError(kind, message, action) {
      clear(fieldError);
      fieldError.setAttribute('data-kind', kind);
      append(fieldError, h('span', null, [message]));
      if (action) append(fieldError, [' ', action]);
      fieldError.hidden = false;
      box.setAttribute('aria-invalid', 'true');
    }

    function hideFieldError(kind) {
      if (kind && fieldError.getAttribute('data-kind') !== kind) return;
      fieldError.hidden = true;
      clear(fieldError);
      fieldError.removeAttribute('data-kind');
      box.removeAttribute('aria-invalid');
    }

    function keepEndButton() {
      var b = h('button', { type: 'button', class: 'linkish' }, [t('keepEnd')]);
      b.addEventListener('click', function () {
        box.value = lastBytes(box.value, MAX_BYTES);
        updateCount();
        box.focus();
      });
      return b;
    }

    function sizeMessage(bytes) { return t('tooBig', { size: formatBytes(bytes) }); }

    function updateCount() {
      var bytes = utf8Length(box.value);
      count.textContent = formatBytes(bytes) + ' / 64 KB';
      var over = bytes > MAX_BYTES;
      count.classList.toggle('over', over);
      if (over) showFieldError('size', sizeMessage(bytes), keepEndButton());
      else hideFieldError('size');
      if (box.value.trim()) hideFieldError('empty');
      return bytes;
    }

    var countPending = false;
    box.addEventListener('input', function () {
      if (countPending) return;
      countPending = true;
      window.requestAnimationFrame(function () { countPending = false; updateCount(); });
    });

    form.addEventListener('submit', function (e) {
      e.preventDefault();
      run(box.value);
    });
    form.addEventListener('keydown', function (e) {
      if (e.key === 'Enter' && (e.ctrlKey || e.metaKey) && !e.isComposing) {
        e.preventDefault();
        run(box.value);
      }
    });
    $('clear-btn').addEventListener('click', function () {
      if (state.controller) state.controller.abort();
      box.value = '';
      updateCount();
      hideFieldError();
      state.last = null;
      clear(results);
      if ($('examples')) $('examples').hidden = false;
      status.textContent = '';
      setLoading(false);
      history.replaceState(null, '', location.pathname);
      box.focus();
    });
    Array.prototype.forEach.call(document.querySelectorAll('[data-example]'), function (b) {
      b.addEventListener('click', function () {
        box.value = EXAMPLES[b.getAttribute('data-example')] || '';
        updateCount();
        run(box.value);
      });
    });

    function setLoading(on) {
      form.classList.toggle('loading', on);
      results.setAttribute('aria-busy', on ? 'true' : 'false');
      results.classList.toggle('stale', on);
      btnText.setAttribute('data-i18n', on ? 'searching' : 'search');
      btnText.textContent = t(on ? 'searching' : 'search');
      clearTimeout(state.slowTimer);
      if (on) {
        status.classList.remove('quiet');
        status.textContent = t('searching');
        state.slowTimer = setTimeout(function () { status.textContent = t('stillSearching'); }, 4000);
      }
    }

    function updateUrl(query) {
      var enc = encodeURIComponent(query);
      if (enc.length <= URL_MAX) {
        history.replaceState(null, '', location.pathname + '?q=' + enc);
        return null;
      }
      history.replaceState(null, '', location.pathname);
      return 'urlTooLong';
    }

    function run(query) {
      if (!query.trim()) {
        showFieldError('empty', t('empty'));
        box.focus();
        return;
      }
      var bytes = utf8Length(query);
      if (bytes > MAX_BYTES) {
        showFieldError('size', sizeMessage(bytes), keepEndButton());
        box.focus();
        return;
      }
      hideFieldError();
      if (state.controller) state.controller.abort();
      var controller = window.AbortController ? new AbortController() : null;
      state.controller = controller;
      var seq = ++state.seq;
      var urlNote = updateUrl(query);
      setLoading(true);
      fetch('/web/search', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'Accept': 'application/json' },
        body: JSON.stringify({ query: query, top_k: TOP_K }),
        signal: controller ? controller.signal : undefined
      }).then(function (res) {
        return res.text().then(function (body) {
          var data = null;
          try { data = body ? JSON.parse(body) : null; } catch (e) { data = null; }
          return { res: res, data: data, body: body };
        });
      }).then(function (r) {
        if (seq !== state.seq) return;
        setLoading(false);
        if (r.res.ok && r.data && Array.isArray(r.data.results)) {
          state.last = { kind: 'ok', data: r.data, urlNote: urlNote };
        } else {
          state.last = { kind: 'error', status: r.res.status, detail: describeDetail(r.data, r.body, r.res) };
        }
        render(true);
        revealResults();
      }).catch(function (err) {
        if (err && err.name === 'AbortError') return;
        if (seq !== state.seq) return;
        setLoading(false);
        state.last = { kind: 'network' };
        render(true);
        revealResults();
      });
    }

    /* On small screens the answer starts below the fold: bring its top into view. */
    function revealResults() {
      var top = results.getBoundingClientRect().top;
      if (top > window.innerHeight * 0.75) {
        var reduce = window.matchMedia && window.matchMedia('(prefers-reduced-motion: reduce)').matches;
        results.scrollIntoView({ block: 'start', behavior: reduce ? 'auto' : 'smooth' });
      }
    }

    function describeDetail(data, body, res) {
      var d = data && data.detail;
      if (typeof d === 'string' && d) return d;
      if (d != null) {
        try { return JSON.stringify(d); } catch (e) { /* fall through */ }
      }
      var text = (body || '').trim();
      if (text && text.length < 300 && !/^</.test(text)) return text;
      return res.statusText || ('HTTP ' + res.status);
    }

    function render(announce) {
      clear(results);
      var last = state.last;
      var examples = $('examples');
      if (examples) examples.hidden = !!last;
      if (!last) return;
      if (last.kind === 'network' || last.kind === 'error') {
        var box_ = h('div', { class: 'notice notice-error', role: 'alert' }, [h('h2', null, [t('errorTitle')])]);
        if (last.kind === 'network') {
          box_.appendChild(h('p', null, [t('networkError')]));
        } else {
          box_.appendChild(h('p', null, [
            h('span', { class: 'error-status' }, [t('errorStatus', { status: last.status })]), ' ',
            h('span', { class: 'error-detail' }, [last.detail])
          ]));
          if (last.status === 503 || last.status === 504 || last.status === 502) box_.appendChild(h('p', null, [t('errorRetry')]));
        }
        results.appendChild(box_);
        if (announce) status.textContent = '';
        return;
      }
      renderResponse(last.data, last.urlNote, announce);
    }

    /* The core's verdict ("answer" | "maybe" | "none") and its reason; the page keeps no thresholds. */
    function verdictOf(data) {
      var v = data.verdict;
      if (v !== 'answer' && v !== 'maybe' && v !== 'none') v = data.confident ? 'answer' : 'maybe';  // an older server
      return v;
    }

    /* The verdict names the top result; every other result is only related. */
    function tierOf(index, verdict) {
      if (index > 0) return 'related';
      return verdict;
    }

    /* A line of text whose `code` spans become <code> elements (text nodes only). */
    function withCode(parent, text) {
      String(text || '').split('`').forEach(function (piece, i) {
        if (!piece) return;
        parent.appendChild(i % 2 ? h('code', null, [piece]) : document.createTextNode(piece));
      });
      return parent;
    }

    function verdictNotice(data, verdict) {
      var key = { answer: 'verdictAnswer', maybe: 'verdictMaybe', none: 'verdictNone' }[verdict];
      var cls = { answer: 'notice notice-ok', maybe: 'notice notice-warn', none: 'notice notice-none' }[verdict];
      var box_ = h('div', { class: cls + ' verdict', id: 'verdict', 'data-verdict': verdict }, [
        h('h3', { class: 'verdict-title' }, [t(key)])
      ]);
      if (data.reason) {
        var why = h('p', { class: 'verdict-reason' }, [h('span', { class: 'why' }, [t('why')])]);
        box_.appendChild(withCode(why, data.reason));
      }
      if (verdict === 'maybe') box_.appendChild(h('p', null, [t('verdictMaybeBody')]));
      return box_;
    }

    function howToAdd() {
      return h('aside', { class: 'how-to-add', id: 'how-to-add', 'aria-labelledby': 'how-to-add-title' }, [
        h('h3', { id: 'how-to-add-title' }, [t('howToAddTitle')]),
        h('p', null, [t('howToAdd1'), h('code', null, ['kb ingest FILE']), t('howToAdd2'),
          h('code', null, ['POST /v1/articles']), t('howToAdd3')])
      ]);
    }

    function renderResponse(data, urlNote, announce) {
      var list = data.results || [];
      var verdict = verdictOf(data);
      var head = h('div', { class: 'results-head' });
      head.appendChild(h('h2', { id: 'results-heading' }, [t('results')]));
      var ms = Math.max(1, Math.round(data.took_ms || 0));
      head.appendChild(h('p', { class: 'results-meta' }, [list.length === 1 ? t('foundOne', { ms: ms }) : t('found', { n: list.length, ms: ms })]));
      results.appendChild(head);

      var sig = data.signature || {};
      var facts = h('div', { class: 'query-facts' });
      if (sig.exception) facts.appendChild(h('p', null, [t('detected'), h('code', null, [sig.exception])]));
      if (data.expanded_terms && data.expanded_terms.length) {
        var terms = h('ul', { class: 'terms' });
        data.expanded_terms.slice(0, 10).forEach(function (term) { terms.appendChild(h('li', { class: 'term' }, [term])); });
        facts.appendChild(h('div', { class: 'terms-row' }, [h('span', null, [t('expanded')]), terms]));
      }
      if (facts.childNodes.length) results.appendChild(facts);
      if (urlNote) results.appendChild(h('p', { class: 'note' }, [t(urlNote)]));

      if (!list.length) {
        if (data.verdict) results.appendChild(verdictNotice(data, 'none'));
        else results.appendChild(h('div', { class: 'notice notice-warn' }, [h('p', null, [t('noResults')])]));
        results.appendChild(howToAdd());
        if (announce) { status.classList.add('quiet'); status.textContent = t('announceNone'); }
        return;
      }
      results.appendChild(verdictNotice(data, verdict));
      if (verdict === 'none') results.appendChild(h('h3', { class: 'related-heading', id: 'related-heading' }, [t('relatedHeading')]));

      var main = h('ol', { class: 'cards' });
      if (verdict === 'none') main.setAttribute('aria-labelledby', 'related-heading');
      var others = [];
      list.forEach(function (r, index) {
        if (index >= CARDS) others.push(r);
        else main.appendChild(h('li', null, [card(r, tierOf(index, verdict), index)]));
      });
      results.appendChild(main);
      if (data.search_id && verdict !== 'none') results.appendChild(feedbackRow(data.search_id, list[0].article_id));
      if (others.length) {
        var ul = h('ul', { class: 'others-list' });
        others.forEach(function (r) {
          ul.appendChild(h('li', null, [
            h('a', { href: articleUrl(r.article_id), lang: contentLang(r.lang) }, [r.title || r.article_id]),
            ' ', h('span', { class: 'pct' }, [Math.round((r.confidence || 0) * 100) + '%'])
          ]));
        });
        results.appendChild(h('details', { class: 'others' }, [h('summary', null, [t('others', { n: others.length })]), ul]));
      }
      if (verdict === 'none') results.appendChild(howToAdd());
      addCopyButtons(results);
      if (announce) {
        status.classList.add('quiet');   // the results say it visibly; screen readers still hear it
        status.textContent = verdict === 'answer' ? t('announceConfident', { title: list[0].title })
          : verdict === 'maybe' ? t('announceMaybe', { title: list[0].title })
          : t('announceNoArticle', { n: list.length });
      }
    }

    /* 👍/👎 on the top result: POST /v1/feedback. A vote is read by people (kb gaps); it never re-ranks. */
    function feedbackRow(searchId, articleId) {
      var row = h('div', { class: 'feedback', id: 'feedback' }, [h('span', { class: 'feedback-ask' }, [t('feedbackAsk')])]);
      function vote(helpful) {
        Array.prototype.forEach.call(row.querySelectorAll('button'), function (b) { b.disabled = true; });
        fetch('/v1/feedback', {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', 'Accept': 'application/json' },
          body: JSON.stringify({ search_id: searchId, article_id: articleId, helpful: helpful })
        }).then(function (res) {
          if (res.ok) { clear(row); row.appendChild(h('p', { role: 'status' }, [t('feedbackThanks')])); return; }
          return res.text().then(function (body) {
            var detail = res.statusText || ('HTTP ' + res.status);
            try { detail = JSON.parse(body).detail || detail; } catch (e) { /* keep the status */ }
            clear(row); row.appendChild(h('p', { role: 'alert' }, [t('feedbackFailed', { detail: detail })]));
          });
        }).catch(function () {
          clear(row); row.appendChild(h('p', { role: 'alert' }, [t('feedbackFailed', { detail: t('networkError') })]));
        });
      }
      var yes = h('button', { type: 'button', class: 'secondary', 'data-helpful': 'true' }, [t('feedbackYes')]);
      var no = h('button', { type: 'button', class: 'secondary', 'data-helpful': 'false' }, [t('feedbackNo')]);
      yes.addEventListener('click', function () { vote(true); });
      no.addEventListener('click', function () { vote(false); });
      append(row, [' ', yes, ' ', no]);
      return row;
    }

    var TIER_WORD = { answer: 'tierAnswer', maybe: 'tierMaybe', none: 'tierNone', related: 'tierRelated' };

    function badge(r, tier) {
      var pct = Math.round((r.confidence || 0) * 100) + '%';
      return h('p', { class: 'badge badge-' + tier, title: t('confidenceTip', { pct: pct }) }, [
        h('span', { class: 'badge-word' }, [t(TIER_WORD[tier])]),
        h('span', { class: 'badge-pct' }, [' · ' + pct])
      ]);
    }

    /* `html` comes from the server's Markdown renderer (routes/web.py: raw HTML escaped, unsafe links
       dropped), the one place article text becomes markup; everything else here is set as text. */
    function part(key, html, cls, lang, collapsed) {
      var md = h('div', { class: 'md', lang: contentLang(lang) });
      md.innerHTML = html;
      if (collapsed) {
        return h('details', { class: 'part ' + cls }, [h('summary', null, [t('showFix')]), md]);
      }
      return h('section', { class: 'part ' + cls }, [h('h4', null, [t(key)]), md]);
    }

    function card(r, tier, index) {
      var titleId = 'result-' + index;
      var el = h('article', { class: 'card card-' + tier, 'aria-labelledby': titleId, 'data-article-id': r.article_id });
      el.appendChild(badge(r, tier));
      el.appendChild(h('h3', { class: 'card-title', id: titleId }, [
        h('a', { href: articleUrl(r.article_id), lang: contentLang(r.lang) }, [r.title || r.article_id])
      ]));
      if (r.matched_error) {
        el.appendChild(h('div', { class: 'matched' }, [
          h('p', { class: 'matched-label' }, [t('matched')]),
          h('pre', { class: 'error-line', tabindex: '0' }, [h('code', null, [h('mark', null, [r.matched_error])])])
        ]));
      }
      var hasCause = r.root_cause && r.root_cause.trim(), hasFix = r.fix && r.fix.trim();
      if (hasCause) el.appendChild(part('rootCause', r.root_cause_html, 'cause', r.lang, false));
      // only the answer shows its fix open; a possible match or a related article keeps it one click away
      var open = tier === 'answer';
      if (hasFix) el.appendChild(part('fix', r.fix_html, 'fix', r.lang, !open));
      if (!hasCause && !hasFix && r.snippet) el.appendChild(part('summary', r.snippet_html, 'snippet', r.lang, false));

      var foot = h('div', { class: 'card-foot' });
      if (r.tags && r.tags.length) {
        var tags = h('ul', { class: 'tags', 'aria-label': t('tags') });
        r.tags.forEach(function (tag) { tags.appendChild(h('li', { class: 'tag' }, [String(tag)])); });
        foot.appendChild(tags);
      }
      if (r.source) {
        var href = safeHref(r.source);
        foot.appendChild(h('p', { class: 'source' }, [t('source') + ': ', href ? externalLink(href, r.source) : r.source]));
      }
      foot.appendChild(h('p', { class: 'read-more' }, [h('a', { href: articleUrl(r.article_id) }, [t('readArticle') + ' →'])]));
      el.appendChild(foot);
      return el;
    }

    initLang(function () { if (state.last) render(false); });
    updateCount();

    var params = new URLSearchParams(location.search);
    var q = params.get('q');
    if (q && q.trim()) {
      box.value = q;
      updateCount();
      run(q);
    } else {
      box.focus();   // the page has one job: ready for Ctrl/Cmd+V
    }
  }

  function lastBytes(text, limit) {
    var lines = text.split('\n'), out = [], size = 0;
    for (var i = lines.length - 1; i >= 0; i--) {
      var add = utf8Length(lines[i]) + (out.length ? 1 : 0);
      if (size + add > limit) break;
      out.unshift(lines[i]);
      size += add;
    }
    if (!out.length) {   // one huge line: keep its end, by characters, until it fits
      var s = lines[lines.length - 1];
      var cut = Math.max(0, s.length - limit);
      s = s.slice(cut);
      while (utf8Length(s) > limit) s = s.slice(Math.ceil((utf8Length(s) - limit) / 3) || 1);
      return s;
    }
    return out.join('\n');
  }

  // -- the article page -----------------------------------------------------------

  function initArticlePage() {
    initLang(null);
    var main = document.getElementById('main');
    if (main) addCopyButtons(main);
  }

  function start() {
    var page = document.body.getAttribute('data-page');
    if (page === 'search') initSearchPage();
    else if (page === 'article') initArticlePage();
    else initLang(null);
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
