/* kb web page: paste an error, read the answer.
 *
 * Plain JS, no build step, no third-party code. Article text is never parsed as HTML:
 * the tiny Markdown renderer below builds DOM nodes and sets text with textContent /
 * text nodes only, and links are kept only when they are absolute http(s) URLs.
 * The page's Content-Security-Policy forbids inline script anyway.
 */
(function () {
  'use strict';

  var MAX_BYTES = 64 * 1024;       // the API's query limit (kb.config.MAX_QUERY_BYTES)
  var URL_MAX = 2000;              // longest encoded query put in the page link
  var TOP_K = 5;
  var CARDS = 3;                   // results shown as cards; the rest are listed by title
  var LANG_KEY = 'kb.lang';

  var I18N = {
    en: {
      skip: 'Skip to content',
      skipToBox: 'Skip to the paste box',
      tagline: 'ML training & serving errors: root cause and fix',
      switch: '中文',
      switchLabel: '切换到中文',
      pageTitle: 'Search the troubleshooting knowledge base',
      pasteLabel: 'Paste an error message, a traceback or a log',
      pasteHelp: 'One line or a whole traceback (up to 64 KB), in English or Chinese. kb picks out the lines that matter.',
      search: 'Search',
      searching: 'Searching…',
      clear: 'Clear',
      tryExample: 'Try an example:',
      exNccl: 'NCCL watchdog timeout',
      exOom: 'CUDA OOM during eval',
      exZh: 'A question in Chinese',
      results: 'Results',
      footer: 'kb — runs offline; your paste never leaves this server.',
      apiDocs: 'API',
      empty: 'Paste an error message first.',
      tooBig: 'This paste is {size}; the limit is 64 KB. Keep the end of the traceback (the exception line and the frames above it) and search again.',
      keepEnd: 'Keep the last 64 KB',
      stillSearching: 'Still searching… The first search after a restart loads the index.',
      found: '{n} articles · {ms} ms',
      foundOne: '1 article · {ms} ms',
      announceConfident: 'Found a confident match: {title}',
      announceMaybe: 'Possible match, check it against your error: {title}',
      announceNoArticle: 'The knowledge base has no article for this error. {n} related articles, not a match.',
      announceNone: 'No articles found.',
      detected: 'Read your paste as: ',
      expanded: 'Also searched for: ',
      urlTooLong: 'This paste is too long for a shareable link (links carry at most 2000 characters), so the address bar does not include it. To share, send the text itself.',
      copyLink: 'Copy link',
      linkCopied: 'Link copied',
      verdictAnswer: 'Confident answer',
      verdictMaybe: 'Possible match — check it against your error',
      verdictMaybeBody: 'Compare its matched error line with yours before applying the fix.',
      verdictNone: 'The knowledge base has no article for this error',
      why: 'Why: ',
      relatedHeading: 'Related, not a match',
      howToAddTitle: 'How to add an article',
      howToAdd1: 'Write the error, its root cause and the fix as a Markdown article (corpus/AUTHORING.md describes the format), then run ',
      howToAdd2: ', or POST it to ',
      howToAdd3: ' with the admin token.',
      noResults: 'No articles matched. Try pasting the last lines of the traceback: the exception line and the frames just above it.',
      feedbackAsk: 'Did the top article solve it?',
      feedbackYes: '👍 Yes',
      feedbackNo: '👎 No',
      feedbackThanks: 'Thanks: recorded. Unanswered errors and 👎 votes are what the team writes articles for next.',
      feedbackFailed: 'Could not record the vote: {detail}',
      tierAnswer: 'Confident match',
      tierMaybe: 'Possible match',
      tierNone: 'Related, not a match',
      tierRelated: 'Related',
      confidenceTip: 'Estimated probability that this article explains your error: {pct}',
      matched: 'Matched error line',
      rootCause: 'Root cause',
      fix: 'Fix',
      showFix: 'Show the fix',
      summary: 'Summary',
      source: 'Source',
      tags: 'Tags',
      readArticle: 'Read the full article',
      others: 'More related articles ({n})',
      copy: 'Copy',
      copyCode: 'Copy this code',
      copied: 'Copied',
      copyFailed: 'Copy failed: select the text and copy it',
      errorTitle: 'The search failed',
      errorStatus: 'The server answered {status}:',
      errorRetry: 'The server is busy or the index is not ready. Try again in a few seconds.',
      networkError: 'Could not reach the kb server. Check that it is running and try again.',
      back: 'New search',
      fullArticle: 'Full article',
      language: 'Language',
      articleId: 'Article id',
      versions: 'Versions',
      none: 'Not stated in this article.',
      notFoundTitle: 'Article not found',
      unavailableTitle: 'The knowledge base is not ready',
      langEn: 'English',
      langZh: 'Chinese'
    },
    zh: {
      skip: '跳到正文',
      skipToBox: '跳到输入框',
      tagline: '模型训练与推理报错：根本原因与解决办法',
      switch: 'English',
      switchLabel: 'Switch to English',
      pageTitle: '搜索故障排查知识库',
      pasteLabel: '粘贴报错信息、完整的 traceback 或日志',
      pasteHelp: '一行报错或整段 traceback 都可以（最多 64 KB），中英文均可。kb 会自动挑出关键的行。',
      search: '搜索',
      searching: '正在搜索…',
      clear: '清空',
      tryExample: '试试示例：',
      exNccl: 'NCCL watchdog 超时',
      exOom: '评估时 CUDA 显存不足',
      exZh: '用中文提问',
      results: '搜索结果',
      footer: 'kb — 离线运行，你粘贴的内容不会离开这台服务器。',
      apiDocs: 'API',
      empty: '请先粘贴报错信息。',
      tooBig: '粘贴的内容有 {size}，上限是 64 KB。请保留 traceback 的末尾部分（异常那一行和它上面的几帧）后再搜索。',
      keepEnd: '只保留最后 64 KB',
      stillSearching: '仍在搜索…重启后的第一次搜索需要加载索引。',
      found: '{n} 篇文章 · {ms} 毫秒',
      foundOne: '1 篇文章 · {ms} 毫秒',
      announceConfident: '找到有把握的答案：{title}',
      announceMaybe: '可能匹配，请先核对：{title}',
      announceNoArticle: '知识库里没有针对这个报错的文章。有 {n} 篇相关但不是同一问题的文章。',
      announceNone: '没有找到文章。',
      detected: '识别出的报错：',
      expanded: '同时搜索了：',
      urlTooLong: '粘贴内容太长，放不进可分享的链接（链接最多 2000 个字符），所以地址栏里不包含它。要分享的话，请直接发送这段文字。',
      copyLink: '复制链接',
      linkCopied: '链接已复制',
      verdictAnswer: '有把握的答案',
      verdictMaybe: '可能匹配：请先核对它和你的报错是否一致',
      verdictMaybeBody: '动手修改之前，请先对比它匹配到的报错行和你的是否一致。',
      verdictNone: '知识库里没有针对这个报错的文章',
      why: '依据：',
      relatedHeading: '相关但不是同一问题',
      howToAddTitle: '如何补充文章',
      howToAdd1: '把报错、根本原因和解决办法写成一篇 Markdown 文章（格式见 corpus/AUTHORING.md），然后运行 ',
      howToAdd2: '，或者用管理员令牌 POST 到 ',
      howToAdd3: '。',
      noResults: '没有匹配的文章。试试只粘贴 traceback 的最后几行：异常那一行和它上面的几帧。',
      feedbackAsk: '排在第一的文章解决问题了吗？',
      feedbackYes: '👍 解决了',
      feedbackNo: '👎 没有',
      feedbackThanks: '谢谢，已记录。没有答案的报错和 👎 会成为团队下一步要写的文章。',
      feedbackFailed: '反馈没有记录下来：{detail}',
      tierAnswer: '有把握的答案',
      tierMaybe: '可能匹配',
      tierNone: '相关但不是同一问题',
      tierRelated: '相关',
      confidenceTip: '这篇文章能解释你的报错的估计概率：{pct}',
      matched: '匹配到的报错行',
      rootCause: '根本原因',
      fix: '解决办法',
      showFix: '查看解决办法',
      summary: '摘要',
      source: '来源',
      tags: '标签',
      readArticle: '阅读全文',
      others: '更多相关文章（{n}）',
      copy: '复制',
      copyCode: '复制这段代码',
      copied: '已复制',
      copyFailed: '复制失败：请手动选中文字复制',
      errorTitle: '搜索失败',
      errorStatus: '服务器返回 {status}：',
      errorRetry: '服务器繁忙或索引尚未就绪，请几秒后再试。',
      networkError: '连不上 kb 服务器。请确认它正在运行，然后重试。',
      back: '重新搜索',
      fullArticle: '全文',
      language: '语言',
      articleId: '文章 ID',
      versions: '适用版本',
      none: '本文未写明。',
      notFoundTitle: '找不到这篇文章',
      unavailableTitle: '知识库还没有准备好',
      langEn: '英文',
      langZh: '中文'
    }
  };

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

  // -- a tiny, safe Markdown renderer -----------------------------------------
  // Fenced and indented code, paragraphs, bullet and numbered lists (nested), headings
  // (shown as bold lines), block quotes, rules; inline `code`, **bold**, *em*, links
  // (http(s) only), <autolinks>, bare URLs, backslash escapes.

  var FENCE = /^( {0,3})(`{3,}|~{3,})\s*([^\s`]*)[^`]*$/;
  var LIST = /^( {0,3})([-*+]|\d{1,9}[.)])(?:([ \t]+)(.*))?$/;
  var HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
  var QUOTE = /^ {0,3}> ?(.*)$/;
  var HR = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
  var ENTITIES = { amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'", apos: "'", nbsp: '\u00a0' };

  function isBlank(line) { return /^\s*$/.test(line); }

  function indentOf(line) {
    var n = 0;
    for (var i = 0; i < line.length; i++) {
      if (line[i] === ' ') n += 1;
      else if (line[i] === '\t') n += 4 - (n % 4);
      else break;
    }
    return n;
  }

  function dedent(line, cols) {
    var n = 0, i = 0;
    while (i < line.length && n < cols && (line[i] === ' ' || line[i] === '\t')) {
      n += line[i] === '\t' ? 4 - (n % 4) : 1;
      i++;
    }
    return line.slice(i);
  }

  function renderMarkdown(src) {
    var frag = document.createDocumentFragment();
    var lines = String(src == null ? '' : src).replace(/\r\n?/g, '\n').split('\n');
    renderBlocks(lines, frag);
    return frag;
  }

  function codeBlock(text, info) {
    var code = h('code', info ? { class: 'language-' + info.replace(/[^\w+#.-]/g, '') } : null, [text]);
    return h('pre', null, [code]);
  }

  function renderBlocks(lines, parent) {
    var i = 0, para = [];
    function flush() {
      if (!para.length) return;
      var p = h('p');
      inline(p, para.join('\n'));
      parent.appendChild(p);
      para = [];
    }
    while (i < lines.length) {
      var line = lines[i], m;
      if (isBlank(line)) { flush(); i++; continue; }
      if ((m = FENCE.exec(line))) {
        flush();
        var fenceIndent = m[1].length, marker = m[2], body = [];
        i++;
        while (i < lines.length) {
          var tl = lines[i].trim();
          if (indentOf(lines[i]) < 4 && tl.length >= marker.length &&
              tl.split('').every(function (ch) { return ch === marker[0]; })) { i++; break; }
          body.push(dedent(lines[i], fenceIndent));
          i++;
        }
        parent.appendChild(codeBlock(body.join('\n'), m[3]));
        continue;
      }
      if (!para.length && indentOf(line) >= 4) {
        flush();
        var code = [];
        while (i < lines.length && (isBlank(lines[i]) || indentOf(lines[i]) >= 4)) {
          code.push(dedent(lines[i], 4));
          i++;
        }
        while (code.length && isBlank(code[code.length - 1])) code.pop();
        parent.appendChild(codeBlock(code.join('\n'), ''));
        continue;
      }
      if (HR.test(line)) { flush(); parent.appendChild(h('hr')); i++; continue; }
      if ((m = HEADING.exec(line))) {
        flush();
        var strong = h('strong');
        inline(strong, m[2] || '');
        parent.appendChild(h('p', { class: 'md-heading' }, [strong]));
        i++;
        continue;
      }
      if (QUOTE.test(line)) {
        flush();
        var inner = [];
        while (i < lines.length && !isBlank(lines[i])) {
          var q = QUOTE.exec(lines[i]);
          inner.push(q ? q[1] : lines[i]);
          i++;
        }
        var bq = h('blockquote');
        renderBlocks(inner, bq);
        parent.appendChild(bq);
        continue;
      }
      if ((m = LIST.exec(line)) && (m[4] || !para.length)) {
        flush();
        i = renderList(lines, i, parent);
        continue;
      }
      para.push(line.replace(/^\s+/, ''));
      i++;
    }
    flush();
  }

  function renderList(lines, i, parent) {
    var first = LIST.exec(lines[i]);
    var ordered = /\d/.test(first[2]);
    var baseIndent = first[1].length;
    var list = h(ordered ? 'ol' : 'ul');
    if (ordered) {
      var start = parseInt(first[2], 10);
      if (start !== 1) list.setAttribute('start', String(start));
    }
    while (i < lines.length) {
      var m = LIST.exec(lines[i]);
      if (!m || /\d/.test(m[2]) !== ordered || m[1].length > baseIndent + 1) break;
      var gap = m[3] ? Math.min(indentOf(m[3]), 4) : 1;
      var contentIndent = m[1].length + m[2].length + gap;
      var itemLines = [m[4] || ''];
      i++;
      while (i < lines.length) {
        var l = lines[i];
        if (isBlank(l)) {
          var j = i + 1;
          while (j < lines.length && isBlank(lines[j])) j++;
          if (j < lines.length && indentOf(lines[j]) >= contentIndent) {
            for (; i < j; i++) itemLines.push('');
            continue;
          }
          break;
        }
        if (indentOf(l) >= contentIndent) { itemLines.push(dedent(l, contentIndent)); i++; continue; }
        if (LIST.test(l) || FENCE.test(l) || HEADING.test(l) || QUOTE.test(l) || HR.test(l)) break;
        if (!isBlank(itemLines[itemLines.length - 1])) { itemLines.push(l.replace(/^\s+/, '')); i++; continue; }
        break;
      }
      var li = h('li');
      renderBlocks(itemLines, li);
      if (li.childNodes.length === 1 && li.firstChild.nodeName === 'P') {
        var p = li.firstChild;
        li.removeChild(p);
        while (p.firstChild) li.appendChild(p.firstChild);
      }
      list.appendChild(li);
      // blank lines between items of the same list
      var k = i;
      while (k < lines.length && isBlank(lines[k])) k++;
      if (k > i && k < lines.length) {
        var next = LIST.exec(lines[k]);
        if (next && /\d/.test(next[2]) === ordered && next[1].length <= baseIndent + 1) i = k;
      }
    }
    parent.appendChild(list);
    return i;
  }

  function isWordChar(ch) { return !!ch && /[\w\u00c0-\uffff]/.test(ch); }

  function findBacktickClose(text, from, len) {
    var i = from;
    while (i < text.length) {
      var j = text.indexOf('`', i);
      if (j < 0) return -1;
      var k = j;
      while (k < text.length && text[k] === '`') k++;
      if (k - j === len) return j;
      i = k;
    }
    return -1;
  }

  /* [label](dest "title") starting at text[i] === '['; returns {label, dest, end} or null. */
  function parseLink(text, i) {
    var depth = 0, j = i;
    for (; j < text.length; j++) {
      var ch = text[j];
      if (ch === '\\') { j++; continue; }
      if (ch === '[') depth++;
      else if (ch === ']') { depth--; if (depth === 0) break; }
    }
    if (j >= text.length || text[j + 1] !== '(') return null;
    var rest = text.slice(j + 2);
    var m = /^\s*(?:<([^<>\n]*)>|([^\s()<>]*(?:\([^\s()<>]*\)[^\s()<>]*)*))(?:\s+("[^"]*"|'[^']*'|\([^)]*\)))?\s*\)/.exec(rest);
    if (!m) return null;
    return { label: text.slice(i + 1, j), dest: m[1] != null ? m[1] : m[2], end: j + 2 + m[0].length };
  }

  function inline(parent, text) {
    var buf = '', i = 0, n = text.length, m;
    function flushText() {
      if (buf) { parent.appendChild(document.createTextNode(buf)); buf = ''; }
    }
    while (i < n) {
      var c = text[i];
      if (c === '\\' && i + 1 < n && /[!-\/:-@\[-`{-~]/.test(text[i + 1])) {
        buf += text[i + 1]; i += 2; continue;
      }
      if (c === '`') {
        var run = 1;
        while (text[i + run] === '`') run++;
        var close = findBacktickClose(text, i + run, run);
        if (close >= 0) {
          var code = text.slice(i + run, close).replace(/\n/g, ' ');
          if (code.length > 2 && code[0] === ' ' && code[code.length - 1] === ' ' && code.trim()) code = code.slice(1, -1);
          flushText();
          parent.appendChild(h('code', null, [code]));
          i = close + run;
          continue;
        }
        buf += text.slice(i, i + run); i += run; continue;
      }
      if ((c === '*' || c === '_') && text[i + 1] === c) {
        var end = text.indexOf(c + c, i + 2);
        if (end > i + 2 && !/\s/.test(text[i + 2]) && !/\s/.test(text[end - 1]) &&
            (c === '*' || (!isWordChar(text[i - 1]) && !isWordChar(text[end + 2])))) {
          flushText();
          var strong = h('strong');
          inline(strong, text.slice(i + 2, end));
          parent.appendChild(strong);
          i = end + 2;
          continue;
        }
      }
      if (c === '*' && text[i + 1] !== '*' && text[i + 1] && !/\s/.test(text[i + 1]) && text[i - 1] !== '*' && !isWordChar(text[i - 1])) {
        var emEnd = text.indexOf('*', i + 1);
        if (emEnd > i + 1 && text[emEnd + 1] !== '*' && !/\s/.test(text[emEnd - 1]) && text.slice(i + 1, emEnd).indexOf('\n') < 0 &&
            !isWordChar(text[emEnd + 1])) {
          flushText();
          var em = h('em');
          inline(em, text.slice(i + 1, emEnd));
          parent.appendChild(em);
          i = emEnd + 1;
          continue;
        }
      }
      if (c === '[' || (c === '!' && text[i + 1] === '[')) {
        var link = parseLink(text, c === '!' ? i + 1 : i);
        if (link) {
          flushText();
          var href = safeHref(link.dest);
          var target = href ? h('a', { href: href, rel: 'nofollow noopener noreferrer' }) : h('span');
          inline(target, link.label || link.dest);
          parent.appendChild(target);
          i = link.end;
          continue;
        }
      }
      if (c === '<' && (m = /^<(https?:\/\/[^\s<>]+)>/i.exec(text.slice(i)))) {
        var auto = safeHref(m[1]);
        if (auto) {
          flushText();
          parent.appendChild(externalLink(auto, m[1]));
          i += m[0].length;
          continue;
        }
      }
      if ((c === 'h' || c === 'H') && !/[\w\/.:-]/.test(text[i - 1] || ' ') &&
          (m = /^https?:\/\/[^\s<>"'`]+/i.exec(text.slice(i)))) {
        var url = m[0].replace(/[.,;:!?'")\]}>，。；：！？）】]+$/, '');
        if (/\(/.test(url) && /\)$/.test(m[0]) && !/\)$/.test(url)) url += ')';
        var bare = safeHref(url);
        if (bare) {
          flushText();
          parent.appendChild(externalLink(bare, url));
          i += url.length;
          continue;
        }
      }
      if (c === '&' && (m = /^&(amp|lt|gt|quot|#39|apos|nbsp);/.exec(text.slice(i)))) {
        buf += ENTITIES[m[1]]; i += m[0].length; continue;
      }
      buf += c;
      i++;
    }
    flushText();
  }

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
      fetch('/v1/search', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'Accept': 'application/json', 'X-KB-Door': 'web' },
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

    function part(key, markdown, cls, lang, collapsed) {
      var md = h('div', { class: 'md', lang: contentLang(lang) });
      md.appendChild(renderMarkdown(markdown));
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
      if (hasCause) el.appendChild(part('rootCause', r.root_cause, 'cause', r.lang, false));
      // only the answer shows its fix open; a possible match or a related article keeps it one click away
      var open = tier === 'answer';
      if (hasFix) el.appendChild(part('fix', r.fix, 'fix', r.lang, !open));
      if (!hasCause && !hasFix && r.snippet) el.appendChild(part('summary', r.snippet, 'snippet', r.lang, false));

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

  // exposed for tests and the console; holds no state worth protecting
  window.kbRenderMarkdown = renderMarkdown;

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
